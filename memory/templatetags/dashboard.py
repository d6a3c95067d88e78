"""Template filters of the dashboard: a mapping's item, and Elasticsearch's ISO timestamps as dates."""

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
