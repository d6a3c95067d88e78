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
    ("sessions", "Conversations"),
    ("facts", "Facts"),
    ("playbooks", "Playbooks"),
    ("corrections", "Corrections"),
    ("forgets", "Forgets"),
)
DATE_W, LANE_W, HEAD_H = 92, 92, 30
STEP, PER_LINE, ROW_PAD = 17, 5, 10
WIDTH = DATE_W + LANE_W * len(LANES)


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
        days[when].append(Mark("sessions", session["id"], label, href, "mark-session"))
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
        what = "all your memories" if forget["what"] == "everything" else f"a memory ({forget['what']})"
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
    session_of = {e["id"]: s["id"] for s in glance.sessions for e in s["episodes"]}
    lines = []
    for fact in glance.facts:
        mark = where.get(fact["id"])
        if mark is None:
            continue
        sources = {session_of[i] for i in fact.get("source_episodes") or [] if i in session_of}
        ends = [(where[s], "edge-source") for s in sources if s in where]
        ends += [(where[i], "edge-correction") for i in fact.get("supersedes") or [] if i in where]
        for end, css in ends:
            lines.append(
                f'<line class="{css}" x1="{num(mark.x)}" y1="{num(mark.y)}" x2="{num(end.x)}" y2="{num(end.y)}"/>'
            )
    return lines


def glance_svg(
    *, glance: Glance, memory_url: Callable[[str], str], session_url: Callable[[str], str]
) -> SafeString | None:
    """The picture of ``glance``, or None when nothing happened in its window."""
    days = _marks(glance, memory_url, session_url)
    if not days:
        return None
    rows, y, drawn = [], HEAD_H, []
    for day in sorted(days, reverse=True):
        by_lane: dict[str, list[Mark]] = defaultdict(list)
        for mark in days[day]:
            by_lane[mark.lane].append(mark)
        lines = max(-(-len(v) // PER_LINE) for v in by_lane.values())
        height = lines * STEP + ROW_PAD
        rows.append(f'<line class="glance-rule" x1="0" x2="{WIDTH}" y1="{y}" y2="{y}"/>')
        rows.append(f'<text class="glance-day" x="4" y="{num(y + STEP)}">{day.isoformat()}</text>')
        for column, (lane, _) in enumerate(LANES):
            for n, mark in enumerate(by_lane.get(lane, [])):
                mark.x = DATE_W + LANE_W * column + 12 + STEP * (n % PER_LINE)
                mark.y = y + ROW_PAD / 2 + STEP * (n // PER_LINE) + STEP / 2
                drawn.append(mark)
        y += height
    heads = "".join(
        f'<text class="glance-lane" x="{num(DATE_W + LANE_W * i + 4)}" y="18">{esc(name)}</text>'
        for i, (_, name) in enumerate(LANES)
    )
    marks = "".join(link(m.href, m.label, _shape(m)) if m.href else _shape(m) for m in drawn)
    title = f"Your memory over the last {glance.days} days"
    desc = (
        f"{len(glance.sessions)} conversations, {sum(1 for f in glance.facts if not f.get('supersedes'))} facts, "
        f"{len(glance.playbooks)} playbooks, {sum(1 for f in glance.facts if f.get('supersedes'))} corrections and "
        f"{len(glance.forgets)} forgets, one row per day, newest first. Lines join a fact to the conversation it "
        "was learnt from and a correction to the version it replaced."
    )
    picture = (
        f'<svg class="glance" viewBox="0 0 {WIDTH} {num(y + 4)}" role="group" aria-labelledby="glance-title glance-desc" '
        f'xmlns="http://www.w3.org/2000/svg"><title id="glance-title">{esc(title)}</title>'
        f'<desc id="glance-desc">{esc(desc)}</desc><g aria-hidden="true">{heads}{"".join(rows)}'
        f"{''.join(_edges(drawn, glance))}</g>{marks}</svg>"
    )
    return figure(picture=picture, css="glance-figure")
