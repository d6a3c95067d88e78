"""The usage ledger and the budgets it enforces: one row per tenant and UTC day (``UsageDay``).

Counters move by one SQL ``UPDATE … SET n = n + k`` each, never read-modify-write, so any number of web
processes and workers count the same row without losing an increment, on SQLite and PostgreSQL alike.
The day's row is created on first use (an insert that loses the race to another process is ignored).

- Writes: the write service reserves one write before it stores a memory (``usage_write_reserve``) and
  gives it back when nothing was stored (``usage_write_release``). With a daily quota the reservation is
  a conditional update (``writes < quota``): the database admits exactly ``quota`` writes a day, however
  many run at once — a reservation given back after a failed store may let a later write in.
- Recalls: counted once where any recall is served — REST, MCP, the dashboard's and the support view's
  search, ``atlas_recall`` (memory.tasks.recall_usage_schedule).
- LLM tokens and cost: added by consolidation after each call (``usage_llm_record``); the monthly token
  budget is checked before each call (``llm_budget_state``).
- Storage: the tenant's documents and bytes, sampled from the engine once a day and on demand
  (memory.services.usage_storage.usage_storage_sample).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import F, Sum
from django.utils import timezone

from atlas_site.errors import QuotaExceeded, ValidationFailed
from tenants.models import Tenant, UsageDay
from tenants.services import audit_record

#: A ledger row's columns as people read them (the admin's list, ``atlas_usage``'s table).
USAGE_COLUMNS = [
    "day",
    "writes",
    "recalls",
    "documents",
    "bytes_stored",
    "llm_prompt_tokens",
    "llm_completion_tokens",
    "llm_cost",
]


def usage_today() -> date:
    return timezone.now().astimezone(UTC).date()


def seconds_to_next_midnight(*, now: datetime | None = None) -> int:
    """Whole seconds until the next UTC midnight (at least 1): when a spent daily quota is fresh again."""
    now = (now or timezone.now()).astimezone(UTC)
    midnight = datetime.combine(now.date() + timedelta(days=1), time.min, tzinfo=UTC)
    return max(1, int((midnight - now).total_seconds() + 0.999))


def month_start(day: date) -> date:
    return day.replace(day=1)


def next_month_start(day: date) -> date:
    return (day.replace(day=28) + timedelta(days=4)).replace(day=1)


def _row_ensure(tenant_id: int, day: date) -> None:
    """The day's row exists afterwards; a concurrent creator's insert wins and ours is dropped."""
    if UsageDay.objects.filter(tenant_id=tenant_id, day=day).exists():
        return
    try:
        with transaction.atomic():  # a savepoint: the unique violation does not spoil an outer transaction
            UsageDay.objects.create(tenant_id=tenant_id, day=day)
    except IntegrityError:
        pass


def _bump(tenant_id: int, day: date, **increments: int | Decimal) -> None:
    changes = {name: F(name) + value for name, value in increments.items()}
    if not UsageDay.objects.filter(tenant_id=tenant_id, day=day).update(**changes):
        _row_ensure(tenant_id, day)
        UsageDay.objects.filter(tenant_id=tenant_id, day=day).update(**changes)


def usage_write_reserve(*, tenant: Tenant) -> None:
    """Count one write of ``tenant`` today, or raise QuotaExceeded (429) when its daily quota is spent."""
    day = usage_today()
    quota = tenant.daily_write_quota
    if quota is None:
        _bump(tenant.pk, day, writes=1)
        return
    _row_ensure(tenant.pk, day)
    # One conditional UPDATE: the check and the count are the same statement, so two processes can never
    # both take the last write of the day.
    if UsageDay.objects.filter(tenant_id=tenant.pk, day=day, writes__lt=quota).update(writes=F("writes") + 1):
        return
    raise QuotaExceeded(
        f"tenant {tenant.slug} has used its daily write quota ({quota} writes per UTC day); "
        "writes are accepted again after midnight UTC",
        retry_after=seconds_to_next_midnight(),
    )


def usage_write_release(*, tenant: Tenant) -> None:
    """Give back a reserved write that stored nothing (the same write again, a refused or failed store)."""
    UsageDay.objects.filter(tenant_id=tenant.pk, day=usage_today(), writes__gt=0).update(writes=F("writes") - 1)


def usage_recall_record(*, tenant_id: int) -> None:
    _bump(tenant_id, usage_today(), recalls=1)


def usage_llm_record(*, tenant_id: int, prompt_tokens: int, completion_tokens: int, requests: int, cost: float) -> None:
    """Add one LLM call's tokens and cost (memory.inference.llm.llm_cost) to today's row."""
    if not (prompt_tokens or completion_tokens or requests):
        return
    _bump(
        tenant_id,
        usage_today(),
        llm_prompt_tokens=prompt_tokens,
        llm_completion_tokens=completion_tokens,
        llm_requests=requests,
        llm_cost=Decimal(str(cost)),
    )


def usage_storage_record(*, tenant: Tenant, documents: int, bytes_stored: int) -> UsageDay:
    """Today's storage sample (the last sample of a day wins)."""
    day = usage_today()
    _row_ensure(tenant.pk, day)
    UsageDay.objects.filter(tenant_id=tenant.pk, day=day).update(
        documents=documents, bytes_stored=bytes_stored, sampled_at=timezone.now()
    )
    return UsageDay.objects.get(tenant_id=tenant.pk, day=day)


@dataclass(frozen=True)
class BudgetState:
    """A tenant's monthly LLM token budget this month: ``budget`` None means no limit."""

    budget: int | None
    used: int
    resumes_on: date

    @property
    def remaining(self) -> int | None:
        return None if self.budget is None else max(0, self.budget - self.used)

    def allows(self, tokens: int) -> bool:
        return self.budget is None or self.used + tokens <= self.budget

    @property
    def message(self) -> str:
        return f"budget reached, resumes on {self.resumes_on.isoformat()}"


def llm_budget_state(*, tenant: Tenant, day: date | None = None) -> BudgetState:
    """The tokens ``tenant`` spent this UTC month against its ``llm_token_budget``."""
    day = day or usage_today()
    totals = UsageDay.objects.filter(tenant_id=tenant.pk, day__gte=month_start(day), day__lte=day).aggregate(
        prompt=Sum("llm_prompt_tokens"), completion=Sum("llm_completion_tokens")
    )
    used = (totals["prompt"] or 0) + (totals["completion"] or 0)
    return BudgetState(budget=tenant.llm_token_budget, used=used, resumes_on=next_month_start(day))


def tenant_budgets_set(
    *,
    tenant: Tenant,
    actor: str,
    llm_token_budget: int | None | object = ...,
    daily_write_quota: int | None | object = ...,
) -> Tenant:
    """Set either budget (None: no limit; ``...``: unchanged), audited when it changes."""
    changed: dict[str, int | None] = {}
    for name, value in (("llm_token_budget", llm_token_budget), ("daily_write_quota", daily_write_quota)):
        if value is ... or value == getattr(tenant, name):
            continue
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise ValidationFailed(f"{name} must be a whole number >= 0, or empty for no limit", field=name)
        changed[name] = value
    if not changed:
        return tenant
    Tenant.objects.filter(pk=tenant.pk).update(**changed)
    for name, value in changed.items():
        setattr(tenant, name, value)
    audit_record(tenant=tenant, actor=actor, action="tenant.budgets", target=tenant.slug, detail=changed)
    return tenant
