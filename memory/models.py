"""Consolidation's bookkeeping in SQL: each run's record, and each subject's watermark and lease.

Memories themselves live only in Elasticsearch; these rows say what the nightly job did to them.
"""

from __future__ import annotations

from django.db import models

from tenants.models import MemorySubject, Tenant


class ConsolidationRun(models.Model):
    """One consolidation of one subject's window of new episodes (resumed in place after a crash)."""

    class Status(models.TextChoices):
        RUNNING = "running"
        DONE = "done"
        SKIPPED = "skipped"
        FAILED = "failed"
        NEEDS_REVIEW = "needs_review", "needs review"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="consolidation_runs")
    subject = models.ForeignKey(MemorySubject, on_delete=models.CASCADE, related_name="consolidation_runs")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    # Who holds (or held) the run: a Celery task id or a CLI invocation's id.
    worker = models.CharField(max_length=100, blank=True)

    class StartedBy(models.TextChoices):
        NIGHTLY = "nightly"
        EARLY = "early", "early (many new turns)"
        MANUAL = "manual", "manual (atlas_consolidate)"

    # How the run was started, for the people reading about it (blank: a run older than this field).
    started_by = models.CharField(max_length=16, choices=StartedBy.choices, blank=True)
    # The window: episodes after (window_start_at, window_start_id) up to and including (window_end_*).
    window_start_at = models.DateTimeField(null=True, blank=True)
    window_start_id = models.CharField(max_length=64, blank=True)
    window_end_at = models.DateTimeField(null=True, blank=True)
    window_end_id = models.CharField(max_length=64, blank=True)
    # Deterministic per (subject, window): the seed of every document id the run writes.
    window_key = models.CharField(max_length=64, blank=True, db_index=True)
    episodes = models.IntegerField(default=0)
    # What was written, per kind of change ({"facts": [ids], "supersessions": [...], ...}), and what the
    # validation dropped ([{"kind", "reason", "text"}]).
    changes = models.JSONField(default=dict, blank=True)
    rejected = models.JSONField(default=list, blank=True)
    # The validated plan, kept before the first write: a resumed run applies it again instead of asking
    # the LLM for another answer, so it writes the same documents.
    plan = models.JSONField(null=True, blank=True)
    attempts = models.IntegerField(default=0)
    llm_model = models.CharField(max_length=200, blank=True)
    prompt_tokens = models.IntegerField(default=0)
    completion_tokens = models.IntegerField(default=0)
    llm_requests = models.IntegerField(default=0)
    cost = models.FloatField(default=0.0)
    duration_ms = models.IntegerField(default=0)
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["subject", "status"]), models.Index(fields=["status", "started_at"])]

    def __str__(self) -> str:
        return f"{self.subject} {self.status} {self.started_at:%Y-%m-%d %H:%M}"

    def change_counts(self) -> dict[str, int]:
        return {kind: len(ids) for kind, ids in (self.changes or {}).items()}


class ConsolidationState(models.Model):
    """Per subject: the last consolidated episode (the watermark) and the lease of the run in progress.

    The lease is a row update guarded by its expiry (see consolidation_lease_acquire), so a worker that
    dies holding it blocks the subject only until ``lease_expires_at``.
    """

    subject = models.OneToOneField(MemorySubject, on_delete=models.CASCADE, related_name="consolidation_state")
    watermark_at = models.DateTimeField(null=True, blank=True)
    watermark_id = models.CharField(max_length=64, blank=True)
    lease_owner = models.CharField(max_length=100, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # When a run was last queued (nightly or early): the early check does not queue it twice.
    queued_at = models.DateTimeField(null=True, blank=True)
    last_run_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.subject} up to {self.watermark_at or 'the beginning'}"


class RejectedProposal(models.Model):
    """A proposal the person rejected, remembered by a hash of its normalised text (never the text), so
    the nightly job does not propose the same fact or playbook to them again (memory/services/review.py)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="rejected_proposals")
    subject = models.ForeignKey(MemorySubject, on_delete=models.CASCADE, related_name="rejected_proposals")
    # The rejected document's id: a later decision on it (a retry, a racing accept) is told it was rejected.
    proposal_id = models.CharField(max_length=64)
    memory_type = models.CharField(max_length=16)
    text_key = models.CharField(max_length=64, db_index=True)
    rejected_by = models.CharField(max_length=200)
    rejected_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-rejected_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["subject", "proposal_id"], name="rejected_proposal_once")]

    def __str__(self) -> str:
        return f"{self.subject} {self.memory_type} {self.text_key[:12]}"
