"""The SVG pieces every picture shares. Every text that reaches the markup goes through :func:`esc`
(``& < > " '``), so a memory reading ``<script>`` or ``]]>`` stays text; nothing here emits CDATA."""

from __future__ import annotations

import re
from datetime import date, datetime

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe


def esc(value: object) -> str:
    """Text for an SVG element or attribute (Django's HTML escaping: SVG in HTML parses the same way)."""
    return str(escape(str(value)))


def short(text: object, *, limit: int) -> str:
    """One line of at most ``limit`` characters (an ellipsis when cut), before escaping."""
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def ident(text: str) -> str:
    """An id fragment from a title: lower-case letters, digits and hyphens only."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "picture"


def num(value: float) -> str:
    """A coordinate, short: 12 rather than 12.0, at most one decimal."""
    rounded = round(value, 1)
    return str(int(rounded)) if rounded == int(rounded) else str(rounded)


def day_of(value: object) -> date | None:
    """The UTC day of a stored timestamp (ISO 8601 text or a datetime); None when there is none."""
    if isinstance(value, datetime):
        return value.date()
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).date()
    except ValueError:
        return None


def link(href: str, label: str, inner: str) -> str:
    """A link inside a picture: named by ``aria-label`` and a ``<title>`` (the tooltip) alike."""
    return f'<a href="{esc(href)}" aria-label="{esc(label)}">{inner}<title>{esc(label)}</title></a>'


def figure(*, picture: str, caption: str = "", extra: str = "", css: str = "picture") -> SafeString:
    """The picture in a ``<figure>``; ``caption`` and ``extra`` are markup the caller built (escaped)."""
    caption_html = f"<figcaption>{caption}</figcaption>" if caption else ""
    return mark_safe(f'<figure class="{esc(css)}">{picture}{caption_html}{extra}</figure>')  # noqa: S308 — built escaped
