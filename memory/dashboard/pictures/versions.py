"""A fact's versions as a graph: the chain oldest → newest down the left, each replacement's arrow
labelled (it changed / it was wrong), and on the right the turns each version cites, each linked to
its page. A cited turn forgotten since is drawn dashed, without a link and without its text.

Like the glance picture, a ``role="group"`` so its links stay reachable (see timeline.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.utils.safestring import SafeString

from .svg import day_of, esc, figure, link, num, short

WIDTH = 560
BOX_X, BOX_W, BOX_H = 8, 300, 44
TURN_X, TURN_W, TURN_H = 348, 204, 24
GAP, TURN_GAP = 34, 6
MAX_CITED = 4


def _version_box(step: dict[str, Any], y: float, memory_url: Callable[[str], str]) -> str:
    memory = step["memory"]
    state = "this" if step["current"] else ("replaced" if step["replaced"] else "newest")
    label = f"Version of {day_of(memory.get('created_at'))}: {short(memory.get('text'), limit=120)}"
    inner = (
        f'<rect class="version-box version-{state}" x="{BOX_X}" y="{num(y)}" width="{BOX_W}" height="{BOX_H}" rx="6"/>'
        f'<text class="version-text" x="{BOX_X + 10}" y="{num(y + 18)}">{esc(short(memory.get("text"), limit=40))}</text>'
        f'<text class="version-meta" x="{BOX_X + 10}" y="{num(y + 36)}">{day_of(memory.get("created_at"))}'
        f"{' · this version' if step['current'] else ''}</text>"
    )
    return link(memory_url(memory["id"]), label, inner)


def _turn_box(
    turn_id: str, turn: dict[str, Any] | None, y: float, memory_url: Callable[[str], str], *, wrong: bool
) -> str:
    """One cited turn. Under a version marked wrong (harsh) the turn is linked but not quoted: the page of
    the correction must not read as if what led to the mistake backed it (tests/memory/dashboard/test_pages.py)."""
    if turn is None:
        return (
            f'<g role="img" aria-label="a cited turn, forgotten since"><rect class="turn-box turn-gone" x="{TURN_X}" '
            f'y="{num(y)}" width="{TURN_W}" height="{TURN_H}" rx="4"/><text class="turn-text" x="{TURN_X + 8}" '
            f'y="{num(y + 16)}">forgotten turn</text><title>a cited turn, forgotten since</title></g>'
        )
    when = day_of(turn.get("created_at"))
    label = f"Turn of {when}" + (
        ", cited by the version marked wrong" if wrong else f": {short(turn.get('text'), limit=120)}"
    )
    shown = f"a turn of {when}" if wrong else short(turn.get("text"), limit=28)
    inner = (
        f'<rect class="turn-box" x="{TURN_X}" y="{num(y)}" width="{TURN_W}" height="{TURN_H}" rx="4"/>'
        f'<text class="turn-text" x="{TURN_X + 8}" y="{num(y + 16)}">{esc(shown)}</text>'
    )
    return link(memory_url(turn_id), label, inner)


def versions_svg(
    *, steps: list[dict[str, Any]], cited: dict[str, dict[str, Any]], memory_url: Callable[[str], str]
) -> SafeString:
    """``steps`` as the fact page builds them (oldest first: memory, current, replaced), ``cited`` the
    turns the subject may still read by id (a cited id absent from it was forgotten)."""
    parts, y = [], 8.0
    for n, step in enumerate(steps):
        turn_ids = [i for i in step["memory"].get("source_episodes") or [] if isinstance(i, str)]
        shown = turn_ids[:MAX_CITED]
        row_h = max(BOX_H, len(shown) * (TURN_H + TURN_GAP) - TURN_GAP + (18 if len(turn_ids) > MAX_CITED else 0))
        box_mid = y + BOX_H / 2
        for k, turn_id in enumerate(shown):
            ty = y + k * (TURN_H + TURN_GAP)
            parts.append(
                f'<line class="edge-source" aria-hidden="true" x1="{BOX_X + BOX_W}" y1="{num(box_mid)}" '
                f'x2="{TURN_X}" y2="{num(ty + TURN_H / 2)}"/>'
            )
            parts.append(_turn_box(turn_id, cited.get(turn_id), ty, memory_url, wrong=step["replaced"] == "harsh"))
        if len(turn_ids) > MAX_CITED:
            more_y = y + len(shown) * (TURN_H + TURN_GAP) + 8
            parts.append(
                f'<text class="turn-text" x="{TURN_X}" y="{num(more_y)}">and {len(turn_ids) - MAX_CITED} more</text>'
            )
        parts.append(_version_box(step, y, memory_url))
        y += row_h
        if n + 1 < len(steps):
            words = "it was wrong" if step["replaced"] == "harsh" else "it changed"
            mid = BOX_X + BOX_W / 2
            parts.append(
                f'<g class="edge-version edge-{step["replaced"] or "natural"}" aria-hidden="true">'
                f'<line x1="{num(mid)}" y1="{num(y + 2)}" x2="{num(mid)}" y2="{num(y + GAP - 4)}"/>'
                f'<path d="M{num(mid - 5)} {num(y + GAP - 10)}L{num(mid)} {num(y + GAP - 3)}L{num(mid + 5)} {num(y + GAP - 10)}"/>'
                f'<text x="{num(mid + 10)}" y="{num(y + GAP / 2 + 4)}">{words}</text></g>'
            )
            y += GAP
    cites = sum(len(s["memory"].get("source_episodes") or []) for s in steps)
    desc = (
        f"{len(steps)} version{'s' if len(steps) != 1 else ''}, oldest at the top, each arrow saying why it was "
        f"replaced; on the right the {cites} turn{'s' if cites != 1 else ''} they were learnt from."
    )
    picture = (
        f'<svg class="versions" viewBox="0 0 {WIDTH} {num(y + 8)}" role="group" '
        f'aria-labelledby="versions-title versions-desc" xmlns="http://www.w3.org/2000/svg">'
        f'<title id="versions-title">The versions of this fact and the turns they cite</title>'
        f'<desc id="versions-desc">{esc(desc)}</desc>{"".join(parts)}</svg>'
    )
    return figure(picture=picture, css="versions-figure")
