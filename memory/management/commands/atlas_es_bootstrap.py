"""atlas_es_bootstrap — create/update indices, aliases and the ILM policy, and mint the service keys. Idempotent."""

from __future__ import annotations

from atlas_site.elastic.licence import isolation_ensure
from memory.elastic.bootstrap import cluster_bootstrap
from tenants.management.base import AtlasCommand
from tenants.models import ApiKeyCredential
from tenants.services import shared_credential_ensure


class Command(AtlasCommand):
    help = "Bootstrap Elasticsearch with the bootstrap credential: indices, aliases, ILM policy, service keys."

    def handle(self, *args, **options) -> None:
        status = isolation_ensure()
        self.stdout.write(f"licence: {status.licence} ({status.licence_status}); isolation mode: {status.mode}")
        report = cluster_bootstrap()
        for alias in report.created:
            self.stdout.write(f"created {alias}")
        for alias in report.updated:
            self.stdout.write(f"up to date {alias}")
        for alias in report.outdated:
            memory_type = alias.rsplit("-", 1)[-1]
            self.stdout.write(
                self.style.WARNING(f"{alias} has an older mapping: run `manage.py atlas_reindex {memory_type}`")
            )
        # The keys' ids are not printed: `make run` shows this output, terminals are logged and shared, and
        # an id is what a flood of guessed secrets needs (issue 24). The admin shows them to operators.
        shared_credential_ensure(kind=ApiKeyCredential.Kind.WRITER, actor=self.actor)
        self.stdout.write("service writer key: ready")
        if status.mode == "app-filter":
            shared_credential_ensure(kind=ApiKeyCredential.Kind.READER, actor=self.actor)
            self.stdout.write(self.style.WARNING("app-filter mode: shared reader key ready"))
        self.stdout.write(self.style.SUCCESS("Elasticsearch is bootstrapped"))
