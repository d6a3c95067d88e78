"""Bar and line charts over categories (consolidation runs) or days (usage), drawn server-side.

Each chart is an ``<svg role="img">`` labelled by its own ``<title>`` and ``<desc>`` (the desc says what
the numbers are and their largest value), a legend in HTML, and the same numbers as a table under a
``<details>``: a screen reader or a narrow screen reads the table. The SVG scales by its viewBox."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import date

from django.utils.safestring import SafeString

from .svg import esc, figure, ident, num

WIDTH, HEIGHT = 640, 320
LEFT, RIGHT, TOP, BOTTOM = 96, 12, 14, 78
MAX_BAR = 28  # a bar no wider than this, however few the categories
MAX_SERIES = 6  # one CSS class each: series-0 … series-5
MAX_AXIS_LABELS = 8


def nice_ceiling(value: float) -> float:
    """The smallest 1, 2, 2.5 or 5 × 10ⁿ at or above ``value`` (an axis' top); 1 for nothing."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * power >= value:
            return step * power
    return 10 * power


def _tick(value: float) -> str:
    if value >= 1_000_000:
        return f"{value / 1_000_000:g}M"
    if value >= 1_000:
        return f"{value / 1_000:g}k"
    return f"{value:g}"


def _check(categories: Sequence[str], series: dict[str, Sequence[float]]) -> None:
    if not series or len(series) > MAX_SERIES:
        raise ValueError(f"a chart draws 1 to {MAX_SERIES} series, not {len(series)}")
    for name, values in series.items():
        if len(values) != len(categories):
            raise ValueError(f"series {name!r} has {len(values)} values for {len(categories)} categories")


def _axes(top: float, plot_w: float, plot_h: float) -> list[str]:
    parts = ['<g class="chart-axis" aria-hidden="true">']
    for i in range(5):
        value = top * i / 4
        y = TOP + plot_h - plot_h * i / 4
        parts.append(f'<line class="chart-grid" x1="{LEFT}" x2="{num(LEFT + plot_w)}" y1="{num(y)}" y2="{num(y)}"/>')
        parts.append(
            f'<text class="chart-tick" x="{LEFT - 6}" y="{num(y + 4)}" text-anchor="end">{_tick(value)}</text>'
        )
    parts.append(
        f'<line class="chart-baseline" x1="{LEFT}" x2="{num(LEFT + plot_w)}" y1="{num(TOP + plot_h)}" y2="{num(TOP + plot_h)}"/>'
    )
    parts.append("</g>")
    return parts


def _labels(categories: Sequence[str], slot: float, baseline: float) -> list[str]:
    """Category labels under the plot, slanted; every n-th one when there are many."""
    every = max(1, math.ceil(len(categories) / MAX_AXIS_LABELS))
    parts = ['<g class="chart-labels" aria-hidden="true">']
    for i, label in enumerate(categories):
        if i % every:
            continue
        x, y = LEFT + slot * (i + 0.5), baseline + 12
        parts.append(
            f'<text class="chart-tick" x="{num(x)}" y="{num(y)}" text-anchor="end" '
            f'transform="rotate(-35 {num(x)} {num(y)})">{esc(label)}</text>'
        )
    parts.append("</g>")
    return parts


def _bars(series: dict[str, Sequence[float]], slot: float, top: float, plot_h: float) -> list[str]:
    parts = []
    width = min(slot * 0.8 / len(series), MAX_BAR)
    margin = (slot - width * len(series)) / 2  # the group centred in its slot
    for s, (name, values) in enumerate(series.items()):
        parts.append(f'<g class="series-{s}">')
        for i, value in enumerate(values):
            height = plot_h * max(value, 0) / top
            x = LEFT + slot * i + margin + width * s
            parts.append(
                f'<rect x="{num(x)}" y="{num(TOP + plot_h - height)}" width="{num(max(width - 1, 1))}" '
                f'height="{num(height)}"><title>{esc(name)}: {value:g}</title></rect>'
            )
        parts.append("</g>")
    return parts


def _lines(series: dict[str, Sequence[float]], slot: float, top: float, plot_h: float) -> list[str]:
    parts = []
    for s, (name, values) in enumerate(series.items()):
        points = [(LEFT + slot * (i + 0.5), TOP + plot_h - plot_h * max(v, 0) / top) for i, v in enumerate(values)]
        path = " ".join(f"{num(x)},{num(y)}" for x, y in points)
        parts.append(f'<g class="series-{s}"><polyline class="chart-line" points="{path}"/>')
        parts += [
            f'<circle cx="{num(x)}" cy="{num(y)}" r="3"><title>{esc(name)}: {v:g}</title></circle>'
            for (x, y), v in zip(points, values, strict=True)
        ]
        parts.append("</g>")
    return parts


def _budget(budget: float, top: float, plot_w: float, plot_h: float) -> list[str]:
    y = TOP + plot_h - plot_h * budget / top
    return [
        f'<g class="chart-budget"><line x1="{LEFT}" x2="{num(LEFT + plot_w)}" y1="{num(y)}" y2="{num(y)}"/>'
        f'<text x="{num(LEFT + plot_w - 4)}" y="{num(y - 5)}" text-anchor="end">budget {_tick(budget)}</text></g>'
    ]


def _table(title: str, heading: str, categories: Sequence[str], series: dict[str, Sequence[float]]) -> str:
    head = "".join(f'<th scope="col">{esc(name)}</th>' for name in series)
    rows = "".join(
        f'<tr><th scope="row">{esc(label)}</th>'
        + "".join(f"<td>{values[i]:g}</td>" for values in series.values())
        + "</tr>"
        for i, label in enumerate(categories)
    )
    return (
        f'<details class="chart-table"><summary>The numbers of “{esc(title)}”</summary>'
        # Focusable: a keyboard scrolls a wide table sideways on a narrow screen (axe scrollable-region-focusable).
        f'<div class="table-wrap" tabindex="0" role="region" aria-label="The numbers of {esc(title)}">'
        f'<table><caption>{esc(title)}</caption><thead><tr><th scope="col">{esc(heading)}</th>{head}</tr></thead>'
        f"<tbody>{rows}</tbody></table></div></details>"
    )


def chart_svg(
    *,
    title: str,
    categories: Sequence[str],
    series: dict[str, Sequence[float]],
    kind: str = "bar",
    budget_line: float | None = None,
    category_heading: str = "",
    description: str = "",
) -> SafeString:
    """A bar (grouped) or line chart of ``series`` (name → one value per category) over ``categories``,
    with a legend, an optional dashed budget line and the numbers as a table. ValueError on a series of
    the wrong length, more than six series, or an unknown kind."""
    if kind not in ("bar", "line"):
        raise ValueError(f"kind must be bar or line, not {kind!r}")
    _check(categories, series)
    largest = max((max(values, default=0) for values in series.values()), default=0)
    top = nice_ceiling(max(largest, budget_line or 0))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / max(len(categories), 1)
    base = ident(title)
    said = description or (
        f"{', '.join(series)} over {len(categories)} {category_heading.lower() or 'categories'}; "
        f"the largest value is {largest:g}" + (f"; the budget is {budget_line:g}" if budget_line is not None else "")
    )
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-labelledby="{base}-title {base}-desc" '
        f'preserveAspectRatio="xMidYMid meet" xmlns="http://www.w3.org/2000/svg">',
        f'<title id="{base}-title">{esc(title)}</title><desc id="{base}-desc">{esc(said)}</desc>',
        *_axes(top, plot_w, plot_h),
        *(_bars if kind == "bar" else _lines)(series, slot, top, plot_h),
        *(_budget(budget_line, top, plot_w, plot_h) if budget_line is not None else []),
        *_labels(categories, slot, TOP + plot_h),
        "</svg>",
    ]
    legend = '<ul class="chart-legend">' + "".join(
        f'<li><span class="chart-swatch series-{s}" aria-hidden="true"></span>{esc(name)}</li>'
        for s, name in enumerate(series)
    )
    legend += (
        '<li><span class="chart-swatch chart-budget" aria-hidden="true"></span>budget</li>' if budget_line else ""
    ) + "</ul>"
    return figure(
        picture="".join(parts),
        caption=legend,
        extra=_table(title, category_heading or "Category", categories, series),
        css="chart-figure",
    )


def daily_chart_svg(
    *,
    title: str,
    days: list[date],
    series: dict[str, list[float]],
    budget_line: float | None = None,
    kind: str = "bar",
) -> SafeString:
    """:func:`chart_svg` over consecutive days (the usage pages: writes, recalls, tokens per day), each
    labelled by its ISO date (every n-th one on the axis when there are many, all in the table)."""
    if any(later <= earlier for earlier, later in zip(days, days[1:], strict=False)):
        raise ValueError("days must be in increasing order, each once")
    return chart_svg(
        title=title,
        categories=[d.isoformat() for d in days],
        series=series,
        kind=kind,
        budget_line=budget_line,
        category_heading="Days",
    )
