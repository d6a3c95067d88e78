"""atlas_consolidate --tenant T [--subject S] [--dry-run] [--since ISO] [--approve RUN | --discard RUN] — consolidation now.

Without --subject: every active subject of the tenant with new episodes. --dry-run prints exactly what
would change, as a diff, and writes nothing (no record, no lease, no watermark).
"""

from __future__ import annotations

from django.core.management.base import CommandError

from memory.consolidation.diff import plan_diff
from memory.consolidation.run import consolidation_run, consolidation_run_approve, consolidation_run_discard
from memory.consolidation.scheduling import subjects_due
from memory.models import ConsolidationRun
from memory.validation import timestamp
from tenants.management.base import AtlasCommand
from tenants.selectors import subject_get, tenant_get


class Command(AtlasCommand):
    help = "Consolidate subjects' new episodes into facts and playbooks (or show what would change with --dry-run)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--subject", help="one subject's external id (default: every subject with new episodes)")
        parser.add_argument("--dry-run", action="store_true", help="print the changes as a diff; write nothing")
        parser.add_argument(
            "--since",
            help="consolidate the episodes after this ISO date-time instead of after the watermark "
            "(the watermark does not move)",
        )
        parser.add_argument("--approve", type=int, metavar="RUN", help="apply a run that waits for review, as planned")
        parser.add_argument(
            "--discard",
            type=int,
            metavar="RUN",
            help="drop the plan of a run that waits for review (the next run asks again)",
        )

    def handle(
        self,
        *args,
        tenant: str,
        subject: str | None,
        dry_run: bool,
        since: str | None,
        approve: int | None,
        discard: int | None,
        **options,
    ) -> None:
        owner = tenant_get(slug=tenant)
        for run_id in (approve, discard):
            if run_id is not None and not ConsolidationRun.objects.filter(pk=run_id, tenant=owner).exists():
                raise CommandError(f"no consolidation run {run_id} in tenant {owner.slug}")
        if approve is not None:
            run = ConsolidationRun.objects.get(pk=approve, tenant=owner)
            self._report(str(run.subject), consolidation_run_approve(run=run, actor=self.actor))
            return
        if discard is not None:
            run = consolidation_run_discard(
                run=ConsolidationRun.objects.get(pk=discard, tenant=owner), actor=self.actor
            )
            self.stdout.write(f"{run.subject}: run {run.pk} discarded; the next run asks the LLM again")
            return
        since_at = timestamp(since, field_name="--since") if since else None
        if subject:
            subjects = [subject_get(tenant=owner, external_id=subject)]
        elif since_at is not None:
            subjects = list(owner.subjects.filter(is_active=True))
        else:
            subjects = [s for s, _ in subjects_due(tenant=owner)]
            if not subjects:
                self.stdout.write(f"no subject of {owner.slug} has new episodes")
        for one in subjects:
            outcome = consolidation_run(subject=one, dry_run=dry_run, since=since_at)
            self._report(str(one), outcome, dry_run=dry_run)

    def _report(self, who: str, outcome, *, dry_run: bool = False) -> None:
        if dry_run:
            self.stdout.write(f"--- {who} (dry run: nothing written)")
            if outcome.error:
                self.stdout.write(f"# {outcome.error}")
            lines = plan_diff(outcome)
            for line in lines:
                self.stdout.write(line)
            if outcome.plan is not None and not lines:
                self.stdout.write(f"# {outcome.episodes} episode(s): no change")
            return
        counts = ", ".join(f"{n} {kind}" for kind, n in outcome.run.change_counts().items()) if outcome.run else ""
        detail = outcome.error or counts or "no change"
        run = f" (run {outcome.run.pk})" if outcome.run else ""
        self.stdout.write(f"{who}: {outcome.status}{run}: {detail}")
        for item in outcome.rejected:
            self.stdout.write(f"  dropped {item['kind']}: {item['reason']}")
