"""A person's memory at a glance: one row per day (newest first) and one column per kind of event —
their conversations, the facts and playbooks stored, the corrections (a fact version replacing an
older one) and the forgets. Every mark but a forget links to the memory's page; a thin line joins a
fact to the conversation it was learnt from, and a correction to the version it replaced.

The SVG is a ``role="group"`` named by its title, not ``role="img"``: an image's children are hidden
from assistive technology, and these marks are links a keyboard and a screen reader must reach."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.utils.safestring import SafeString

from memory.glance import Glance

from .svg import day_of, esc, figure, link, num, short

LANES = (
    ("sessions", "Sessions"),
    ("facts", "Facts"),
    ("playbooks", "Playbooks"),
    ("corrections", "Corrections"),
    ("forgets", "Forgets"),
)
#: What a forget took, in words (the audit trail keeps the kind of memory, never its text).
FORGOTTEN = {
    "everything": "all your memories",
    "episodic": "something you said",
    "semantic": "a fact",
    "archive": "a replaced fact",
    "procedural": "a playbook",
}
DATE_W, LANE_W, HEAD_H = 74, 80, 34
STEP, PER_LINE, ROW_PAD = 17, 4, 18
WIDTH = DATE_W + LANE_W * len(LANES)
NARROW_W, NARROW_LABEL_W = 300, 84
NARROW_PER_LINE = (NARROW_W - NARROW_LABEL_W - 16) // STEP


@dataclass
class Mark:
    lane: str
    key: str  # what the lines join: a session id, a memory id
    label: str  # the accessible name and the tooltip
    href: str | None
    css: str
    x: float = 0.0
    y: float = 0.0


def _fact_css(memory: dict[str, Any]) -> str:
    status = memory.get("status") or ("superseded" if memory.get("superseded_by") else "current")
    return f"mark-fact status-{status}"


def _marks(
    glance: Glance, memory_url: Callable[[str], str], session_url: Callable[[str], str]
) -> dict[date, list[Mark]]:
    days: dict[date, list[Mark]] = defaultdict(list)
    for session in glance.sessions:
        when = day_of(session["last_at"])
        turns = len(session["episodes"])
        name = f"conversation {session['id']}" if session["named"] else "turns outside a conversation"
        label = f"{short(name, limit=60)}: {turns} turn{'s' if turns != 1 else ''}, last on {when}"
        href = session_url(session["id"]) if session["named"] else memory_url(session["episodes"][0]["id"])
        # Keyed apart from memory ids: a session may be named anything, even like a memory's id.
        days[when].append(Mark("sessions", f"session:{session['id']}", label, href, "mark-session"))
    for fact in glance.facts:
        corrects = bool(fact.get("supersedes"))
        lane = "corrections" if corrects else "facts"
        what = "Correction" if corrects else "Fact"
        label = f"{what}: {short(fact.get('text'), limit=80)} (stored {day_of(fact.get('created_at'))})"
        days[day_of(fact.get("created_at"))].append(
            Mark(lane, fact["id"], label, memory_url(fact["id"]), _fact_css(fact))
        )
    for playbook in glance.playbooks:
        label = f"Playbook: {short(playbook.get('name') or playbook.get('text'), limit=80)}"
        days[day_of(playbook.get("created_at"))].append(
            Mark("playbooks", playbook["id"], label, memory_url(playbook["id"]), "mark-playbook")
        )
    for forget in glance.forgets:
        what = FORGOTTEN.get(forget["what"], "a memory")
        label = f"Forgotten: {what}, on {forget['at']:%Y-%m-%d %H:%M} UTC"
        days[forget["at"].date()].append(Mark("forgets", "", label, None, "mark-forget"))
    days.pop(None, None)
    return days


def _shape(mark: Mark) -> str:
    x, y = num(mark.x), num(mark.y)
    if mark.lane == "playbooks":
        return f'<rect class="{mark.css}" x="{num(mark.x - 6)}" y="{num(mark.y - 6)}" width="12" height="12" rx="2"/>'
    if mark.lane == "corrections":
        points = f"{x},{num(mark.y - 7)} {num(mark.x + 7)},{y} {x},{num(mark.y + 7)} {num(mark.x - 7)},{y}"
        return f'<polygon class="{mark.css}" points="{points}"/>'
    if mark.lane == "forgets":
        d = f"M{num(mark.x - 5)} {num(mark.y - 5)}L{num(mark.x + 5)} {num(mark.y + 5)}M{num(mark.x + 5)} {num(mark.y - 5)}L{num(mark.x - 5)} {num(mark.y + 5)}"
        return f'<g role="img" aria-label="{esc(mark.label)}"><path class="{mark.css}" d="{d}"/><title>{esc(mark.label)}</title></g>'
    return f'<circle class="{mark.css}" cx="{x}" cy="{y}" r="6"/>'


def _edges(marks: list[Mark], glance: Glance) -> list[str]:
    """Fact → the conversation it cites; correction → the version it replaced (when both are drawn)."""
    where = {m.key: m for m in marks if m.key}
    session_of = {e["id"]: f"session:{s['id']}" for s in glance.sessions for e in s["episodes"]}
    lines = []
    for fact in glance.facts:
        mark = where.get(fact["id"])
        if mark is None:
            continue
        sources = {session_of[i] for i in fact.get("source_episodes") or [] if i in session_of}
        ends = [(where[s], "edge-source") for s in sources if s in where]
        ends += [(where[i], "edge-correction") for i in fact.get("supersedes") or [] if i in where]
        for end, css in ends:
            # An arc over the row, not a straight line through the marks between the two ends.
            bulge = min(12 + abs(end.x - mark.x) / 10, 16)
            cx, cy = (mark.x + end.x) / 2, min(mark.y, end.y) - bulge
            lines.append(
                f'<path class="{css}" d="M{num(mark.x)} {num(mark.y)}Q{num(cx)} {num(cy)} {num(end.x)} {num(end.y)}"/>'
            )
    return lines


def _by_lane(marks: list[Mark]) -> dict[str, list[Mark]]:
    by_lane: dict[str, list[Mark]] = defaultdict(list)
    for mark in marks:
        by_lane[mark.lane].append(mark)
    return by_lane


def _wide(days: dict[date, list[Mark]]) -> tuple[list[str], float, list[Mark]]:
    """One row per day, one column per lane (the lanes' names once, on top)."""
    parts = [
        f'<text class="glance-lane" x="{num(DATE_W + LANE_W * i + 2)}" y="20">{esc(name)}</text>'
        for i, (_, name) in enumerate(LANES)
    ]
    y, drawn = HEAD_H, []
    for day in sorted(days, reverse=True):
        by_lane = _by_lane(days[day])
        lines = max(-(-len(v) // PER_LINE) for v in by_lane.values())
        parts.append(f'<line class="glance-rule" x1="0" x2="{WIDTH}" y1="{y}" y2="{y}"/>')
        parts.append(f'<text class="glance-day" x="4" y="{num(y + ROW_PAD - 2 + STEP / 2)}">{day.isoformat()}</text>')
        for column, (lane, _) in enumerate(LANES):
            for n, mark in enumerate(by_lane.get(lane, [])):
                mark.x = DATE_W + LANE_W * column + 12 + STEP * (n % PER_LINE)
                mark.y = y + ROW_PAD - 6 + STEP * (n // PER_LINE) + STEP / 2  # room above for the arcs
                drawn.append(mark)
        y += lines * STEP + ROW_PAD
    return parts, y, drawn


def _narrow(days: dict[date, list[Mark]]) -> tuple[list[str], float, list[Mark]]:
    """For a phone: each day a block, its lanes one under another (only those with marks), so the text
    stays near its real size on a 320 px screen."""
    parts, y, drawn = [], 0.0, []
    for day in sorted(days, reverse=True):
        by_lane = _by_lane(days[day])
        parts.append(f'<line class="glance-rule" x1="0" x2="{NARROW_W}" y1="{num(y)}" y2="{num(y)}"/>')
        parts.append(f'<text class="glance-lane" x="4" y="{num(y + 17)}">{day.isoformat()}</text>')
        y += 24
        for lane, name in LANES:
            marks = by_lane.get(lane, [])
            if not marks:
                continue
            parts.append(f'<text class="glance-day" x="12" y="{num(y + 14)}">{esc(name)}</text>')
            for n, mark in enumerate(marks):
                mark.x = NARROW_LABEL_W + 10 + STEP * (n % NARROW_PER_LINE)
                mark.y = y + 10 + STEP * (n // NARROW_PER_LINE)
                drawn.append(mark)
            y += -(-len(marks) // NARROW_PER_LINE) * STEP + 6
        y += 6
    return parts, y, drawn


def _picture(glance: Glance, layout: str, width: int, placed: tuple[list[str], float, list[Mark]]) -> str:
    parts, height, drawn = placed
    marks = "".join(link(m.href, m.label, _shape(m)) if m.href else _shape(m) for m in drawn)
    facts = sum(1 for f in glance.facts if not f.get("supersedes"))
    title = f"Your memory over the last {glance.days} days"
    desc = (
        f"{len(glance.sessions)} sessions, {facts} facts, {len(glance.playbooks)} playbooks, "
        f"{len(glance.facts) - facts} corrections and {len(glance.forgets)} forgets, by day, newest first. "
        "Lines join a fact to the session it was learnt from and a correction to the version it replaced."
    )
    return (
        f'<svg class="glance glance-{layout}" viewBox="0 0 {width} {num(height + 4)}" role="group" '
        f'aria-labelledby="glance-{layout}-title glance-{layout}-desc" xmlns="http://www.w3.org/2000/svg">'
        f'<title id="glance-{layout}-title">{esc(title)}</title><desc id="glance-{layout}-desc">{esc(desc)}</desc>'
        f'<g aria-hidden="true">{"".join(parts)}{"".join(_edges(drawn, glance))}</g>{marks}</svg>'
    )


def glance_svg(
    *, glance: Glance, memory_url: Callable[[str], str], session_url: Callable[[str], str]
) -> SafeString | None:
    """The picture of ``glance`` in two layouts — wide, and narrow for a phone; the stylesheet shows one
    (the other is ``display: none``, so neither a reader nor the keyboard meets its links twice) — or None
    when nothing happened in its window."""
    if not _marks(glance, memory_url, session_url):
        return None
    wide = _picture(glance, "wide", WIDTH, _wide(_marks(glance, memory_url, session_url)))
    narrow = _picture(glance, "narrow", NARROW_W, _narrow(_marks(glance, memory_url, session_url)))
    return figure(picture=wide + narrow, css="glance-figure")
