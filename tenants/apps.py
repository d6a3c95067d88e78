from django.apps import AppConfig
from django.db.models.signals import post_migrate


class TenantsConfig(AppConfig):
    name = "tenants"
    verbose_name = "Tenants, people and credentials"

    def ready(self) -> None:
        from .services import site_sync

        # After every migrate (the sites app's own step has created its example.com row by then).
        post_migrate.connect(site_sync, sender=self, dispatch_uid="tenants.site_sync")
