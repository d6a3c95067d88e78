from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"
    verbose_name = "Webhooks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from tenants.dashboard.contributions import section_notice_register

        from .selectors import endpoints_disabled_notice

        # The tenant section tells its admins about a disabled endpoint on every page (tenants imports no
        # webhooks code: the notice is registered here).
        section_notice_register(name="webhooks", notice=endpoints_disabled_notice)
