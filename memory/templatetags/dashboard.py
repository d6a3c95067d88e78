"""Template filters of the dashboard: a mapping's item, Elasticsearch's ISO timestamps as dates, and a search
hit's explanation in a person's words."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django import template

register = template.Library()


@register.filter
def get_item(mapping: Any, key: Any) -> Any:
    return mapping.get(key) if hasattr(mapping, "get") else None


@register.filter
def when(value: Any) -> str:
    """``2025-03-04T10:11:12.123+00:00`` → ``2025-03-04 10:11 UTC`` (stored times are UTC)."""
    if not value:
        return "—"
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return str(value)
    return parsed.strftime("%Y-%m-%d %H:%M UTC")


@register.filter
def days(mention: Any) -> str:
    """A date a memory names, as the days it covers: ``2026-02-01``–``2026-02-28`` → ``2026-02-01 – 2026-02-28``,
    one day alone (memory.temporal: ``end`` is inclusive)."""
    start, end = (mention or {}).get("start"), (mention or {}).get("end")
    if not start:
        return "—"
    return start if not end or end == start else f"{start} – {end}"


#: What each recall leg means to a person (the explanation's details keep the legs' own names).
LEG_WORDS = {
    "bm25": "matched your words",
    "dense": "similar meaning",
    "multilingual": "similar meaning",
    "crosslingual": "similar meaning in another language",
    "time": "about the time you named",
}


@register.filter
def found_by(why: Any) -> str:
    """``{"legs": {"bm25": {"rank": 2}, "dense": {"rank": None}}}`` → ``matched your words``."""
    legs = (why or {}).get("legs", {})
    said = [LEG_WORDS.get(name, name) for name, leg in legs.items() if leg.get("rank") is not None]
    return " and ".join(dict.fromkeys(said)) or "ranked in by the other results"


#: Who a fact or playbook speaks for, as the person reads it (memory/authority.py).
AUTHORITY_WORDS = {
    "person": "you",
    "agent": "an agent",
    "consolidation": "nightly consolidation",
    "import": "an import",
    "operator": "an operator",
}


@register.filter
def authority_words(value: Any) -> str:
    return AUTHORITY_WORDS.get(value, "")
