"""What a run may spend: the tenant's monthly LLM token budget and the per-subject daily token cap, both
checked before each LLM call with that call's estimated tokens, so a run stops before the call that
would pass either — never after it, and never between a plan's writes (a plan already obtained is
applied whole: its tokens are spent)."""

from __future__ import annotations

from datetime import UTC, datetime, time

from django.conf import settings
from django.db.models import Sum
from django.utils import timezone

from memory.models import ConsolidationRun
from tenants.models import MemorySubject
from tenants.usage import llm_budget_state

#: Characters per token for the estimate: ~4 for English with OpenAI's tokenisers; an estimate above the
#: truth only stops a run earlier.
CHARS_PER_TOKEN = 4


def call_tokens_estimate(*, system: str, user: str) -> int:
    """The most tokens one call may spend: its prompt (by length, with the structured-output schema the
    client may add) plus the longest answer it may get (ATLAS_LLM_MAX_TOKENS)."""
    prompt = -(-(len(system) + len(user)) // CHARS_PER_TOKEN)
    return prompt + settings.ATLAS_LLM_MAX_TOKENS


def subject_tokens_today(*, subject: MemorySubject) -> int:
    """The LLM tokens the subject's consolidation runs spent since the last UTC midnight."""
    midnight = datetime.combine(timezone.now().astimezone(UTC).date(), time.min, tzinfo=UTC)
    totals = ConsolidationRun.objects.filter(subject=subject, started_at__gte=midnight).aggregate(
        prompt=Sum("prompt_tokens"), completion=Sum("completion_tokens")
    )
    return (totals["prompt"] or 0) + (totals["completion"] or 0)


def budget_stop(*, subject: MemorySubject, tokens: int) -> str:
    """Why a call of ``tokens`` (estimated) must not be made for ``subject`` now, or "" when it may:
    the tenant's budget ("budget reached, resumes on <first of next month>") or the subject's cap."""
    state = llm_budget_state(tenant=subject.tenant)
    if not state.allows(tokens):
        return (
            f"{state.message}: {state.used} of the tenant's {state.budget} LLM tokens this month are spent, "
            f"the next call may take {tokens}"
        )
    cap = settings.ATLAS_CONSOLIDATION_SUBJECT_TOKEN_CAP
    if cap > 0:
        spent = subject_tokens_today(subject=subject)
        if spent + tokens > cap:
            return (
                f"subject token cap reached, resumes tomorrow (UTC): {spent} of {cap} tokens spent today, "
                f"the next call may take {tokens}"
            )
    return ""
