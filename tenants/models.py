"""Tenancy in the SQL database: tenants, people, memberships, memory subjects, credentials, audit."""

from __future__ import annotations

import uuid

from django.contrib.auth.models import AbstractBaseUser, BaseUserManager, PermissionsMixin
from django.db import models
from django.db.models import Q
from django.utils import timezone


class PersonManager(BaseUserManager["Person"]):
    use_in_migrations = True

    def create_user(self, email: str, password: str | None = None, **extra) -> Person:
        if not email:
            raise ValueError("a person needs an email address")
        person = self.model(email=self.normalize_email(email).lower(), **extra)
        person.set_password(password)
        person.save(using=self._db)
        return person

    def create_superuser(self, email: str, password: str | None = None, **extra) -> Person:
        extra.update(is_staff=True, is_superuser=True)
        return self.create_user(email, password, **extra)


class Person(AbstractBaseUser, PermissionsMixin):
    """Someone who logs in (dashboard user, tenant admin, operator); email is the login."""

    email = models.EmailField(unique=True)
    full_name = models.CharField(max_length=200, blank=True)
    is_active = models.BooleanField(default=True)
    is_staff = models.BooleanField(default=False, help_text="May log in to the operators' admin.")
    date_joined = models.DateTimeField(default=timezone.now)

    objects = PersonManager()
    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS: list[str] = []

    class Meta:
        verbose_name = "person"
        verbose_name_plural = "people"

    def __str__(self) -> str:
        return self.email


class Tenant(models.Model):
    slug = models.SlugField(max_length=50, unique=True)
    name = models.CharField(max_length=200)
    # The tenant_id stamped on its documents: stable even if the slug changes.
    es_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    deactivated_at = models.DateTimeField(null=True, blank=True)
    non_english_catalog = models.BooleanField(
        null=True,
        default=False,
        help_text="Whether some catalog entry does not read as English (unknown for entries written before "
        "this was kept: atlas_language_census fills it). While no memory recall sees does, recall skips "
        "the cross-lingual leg for English questions: it would judge nothing.",
    )
    episode_retention_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Delete episodes older than this many days, nightly (empty: keep them). An episode a current "
        "fact cites is kept until that fact is forgotten.",
    )

    class ReviewMode(models.TextChoices):
        OFF = "off", "off: everything written is used at once"
        CONSOLIDATION = "consolidation", "consolidation: what the nightly job writes waits for review"
        AGENTS = "agents", "agents: what consolidation and agents write waits for review"

    review_mode = models.CharField(
        max_length=16,
        choices=ReviewMode.choices,
        default=ReviewMode.OFF,
        help_text="Which writers' facts and playbooks wait as pending proposals until the person accepts them "
        "(pending memories are never recalled). A person's own facts are never replaced without their review "
        "in any mode.",
    )
    consolidation_merge_scopes = models.BooleanField(
        default=False,
        help_text="Whether consolidation may distil one fact from episodes of different scopes (agents, apps, "
        "runs, metadata; docs/scoping.md). Off: such a fact is refused, and each fact carries the scope of the "
        "episodes it came from; on: it carries what they share.",
    )

    # Budgets (docs/operations.md "Budgets and usage"); empty: no limit.
    llm_token_budget = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        help_text="LLM tokens (in + out) consolidation may spend per calendar month (UTC); at the budget the "
        "nightly job stops before its next LLM call and resumes on the first of the next month. Empty: no limit.",
    )
    daily_write_quota = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Memories agents and people may write per UTC day; past it writes answer 429 until the next "
        "UTC midnight. Empty: no limit.",
    )

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class UsageDay(models.Model):
    """One tenant's usage on one UTC day: counters bumped in SQL (one UPDATE each, safe from any number of
    processes) and the storage sample the daily task takes from the engine (tenants/usage.py)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="usage_days")
    day = models.DateField()
    writes = models.PositiveIntegerField(default=0)
    recalls = models.PositiveIntegerField(default=0)
    # The tenant's documents and an estimate of their bytes, when last sampled that day (null: not sampled).
    documents = models.PositiveBigIntegerField(null=True, blank=True)
    bytes_stored = models.PositiveBigIntegerField(null=True, blank=True)
    sampled_at = models.DateTimeField(null=True, blank=True)
    llm_prompt_tokens = models.PositiveBigIntegerField(default=0)
    llm_completion_tokens = models.PositiveBigIntegerField(default=0)
    llm_requests = models.PositiveIntegerField(default=0)
    llm_cost = models.DecimalField(max_digits=14, decimal_places=6, default=0)

    class Meta:
        ordering = ["tenant", "-day"]
        constraints = [models.UniqueConstraint(fields=["tenant", "day"], name="usage_day_tenant_day_unique")]

    def __str__(self) -> str:
        return f"{self.tenant} {self.day}"

    @property
    def llm_tokens(self) -> int:
        return self.llm_prompt_tokens + self.llm_completion_tokens


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner"
        ADMIN = "admin"
        MEMBER = "member"

    person = models.ForeignKey(Person, on_delete=models.CASCADE, related_name="memberships")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["person", "tenant"], name="membership_person_tenant_unique")]

    def __str__(self) -> str:
        return f"{self.person} in {self.tenant} ({self.role})"


class MemorySubject(models.Model):
    """An end user whose memories are stored, known to the tenant by an external id."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="subjects")
    external_id = models.CharField(max_length=128)
    display_name = models.CharField(max_length=200, blank=True)
    person = models.ForeignKey(Person, null=True, blank=True, on_delete=models.SET_NULL, related_name="subjects")
    # The user_id stamped on the subject's documents.
    es_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    deactivated_at = models.DateTimeField(null=True, blank=True)
    non_english_memories = models.BooleanField(
        null=True,
        default=False,
        help_text="Whether some memory of the subject does not read as English (see Tenant.non_english_catalog).",
    )

    class Meta:
        ordering = ["tenant__slug", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "external_id"], name="subject_tenant_external_id_unique")
        ]
        # The operators' memory pages (memory/admin_memory.py): memories live in Elasticsearch, not in a
        # model, so their permissions hang on the subject they belong to.
        permissions = [
            ("view_memory", "Can view a subject's memories"),
            ("change_memory", "Can edit a subject's facts"),
            ("forget_memory", "Can forget a subject's memories"),
        ]

    def __str__(self) -> str:
        return f"{self.tenant.slug}/{self.external_id}"


class ApiKeyCredential(models.Model):
    """One Elasticsearch API key we minted. The secret is Fernet-encrypted and never shown again.

    An owner (a tenant, a subject, or the service writer) has at most one active
    row; rotation adds a new row and invalidates the old one, so the history stays.
    """

    class Kind(models.TextChoices):
        TENANT = "tenant", "tenant reader"
        SUBJECT = "subject", "subject reader"
        WRITER = "writer", "service writer"
        # Only in ATLAS_ISOLATION_MODE=app-filter: one reader for everyone, no DLS.
        READER = "reader", "shared reader (app-filter mode)"

    kind = models.CharField(max_length=10, choices=Kind.choices)
    tenant = models.ForeignKey(Tenant, null=True, blank=True, on_delete=models.PROTECT, related_name="credentials")
    subject = models.ForeignKey(
        MemorySubject, null=True, blank=True, on_delete=models.PROTECT, related_name="credentials"
    )
    es_key_id = models.CharField(max_length=64, unique=True)
    es_key_name = models.CharField(max_length=256)
    secret_encrypted = models.TextField(editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    invalidated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                name="credential_owner_matches_kind",
                condition=(
                    Q(kind="tenant", tenant__isnull=False, subject__isnull=True)
                    | Q(kind="subject", tenant__isnull=False, subject__isnull=False)
                    | Q(kind__in=["writer", "reader"], tenant__isnull=True, subject__isnull=True)
                ),
            )
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} key {self.es_key_id}"

    @property
    def is_active(self) -> bool:
        return self.invalidated_at is None


class AuditRecord(models.Model):
    """What was done to tenants, credentials and memories, by whom (never a secret)."""

    tenant = models.ForeignKey(Tenant, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_records")
    actor = models.CharField(max_length=200)
    action = models.CharField(max_length=64)
    target = models.CharField(max_length=300)
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["action", "created_at"])]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor} {self.action} {self.target}"


class ApiToken(models.Model):
    """A bearer token an agent presents to the REST API or the MCP endpoint.

    ``atlas_<prefix>_<secret>``: the prefix is stored in clear (look-up, display), the secret only as
    its SHA-256 — it is 32 random bytes, so a fast hash is enough (no dictionary to try) and a look-up
    costs one index probe. A tenant token acts for any active subject of its tenant, naming it per
    call; a subject token only ever acts as its subject.

    A *personal* token is a subject token its subject's own person made in the dashboard (``person`` set):
    it is theirs, not the subject's, so it works only while that person is active and linked to that
    subject — unlinking, relinking, deactivating the person or removing them from the tenant revokes it,
    and authentication refuses it even where a path forgot to.
    """

    class Kind(models.TextChoices):
        TENANT = "tenant", "tenant service token"
        SUBJECT = "subject", "subject token"

    class Scope(models.TextChoices):
        READ = "read"
        WRITE = "write"
        FORGET = "forget"
        # Decide proposals (accept/reject): a person's act, granted knowingly — never implied by write.
        REVIEW = "review"

    kind = models.CharField(max_length=10, choices=Kind.choices)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_tokens")
    subject = models.ForeignKey(
        MemorySubject, null=True, blank=True, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, unique=True)
    secret_sha256 = models.CharField(max_length=64, editable=False)
    scopes = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=200)
    # Deleting the person deletes their personal tokens: none can outlive the person it acts for.
    person = models.ForeignKey(
        Person,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="personal_tokens",
        help_text="Set on a personal token (made by the subject's own person): it works only while they are "
        "active and linked to the subject.",
    )
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                name="api_token_subject_matches_kind",
                condition=Q(kind="tenant", subject__isnull=True) | Q(kind="subject", subject__isnull=False),
            ),
            models.CheckConstraint(
                name="api_token_person_only_on_subject_tokens",
                condition=Q(person__isnull=True) | Q(kind="subject"),
            ),
        ]

    def __str__(self) -> str:
        return f"atlas_{self.prefix}_… ({self.name})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > timezone.now())


class IdempotencyRecord(models.Model):
    """A POST's first answer, kept 24 h for replay to a retry with the same Idempotency-Key — in the
    database, so it outlives a restart and is shared by every web worker (with REDIS_URL, Redis holds
    them instead: atlas_site/idempotency.py). Listed by owner (tenant, subject) so forgetting finds it."""

    slot = models.CharField(max_length=80, unique=True)  # sha256 of (token, path, key)
    tenant_key = models.CharField(max_length=64)  # the tenant's es_id
    subject = models.CharField(max_length=300, blank=True)  # the subject's external id, hex; "" = the tenant's
    running = models.BooleanField(default=True)
    digest = models.CharField(max_length=64)
    record = models.JSONField(null=True, blank=True)
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        indexes = [models.Index(fields=["tenant_key", "subject"], name="idempotency_owner")]

    def __str__(self) -> str:
        return f"{self.slot[:12]}… ({'running' if self.running else 'done'})"
