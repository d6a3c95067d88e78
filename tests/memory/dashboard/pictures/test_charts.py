"""The chart module on synthetic numbers: what it draws, where, and that text stays text."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import date, timedelta

import pytest

from memory.dashboard.pictures.charts import chart_svg, daily_chart_svg, nice_ceiling

SVG = "{http://www.w3.org/2000/svg}"
DAYS = [date(2026, 11, 1) + timedelta(days=n) for n in range(30)]


def _svg(html: str) -> ET.Element:
    """The chart's <svg>, parsed as XML: the markup must be well-formed."""
    return ET.fromstring(re.search(r"<svg.*</svg>", html, re.S).group(0))  # noqa: S314 — our own markup


def test_a_daily_bar_chart_draws_one_bar_per_day_and_series_scaled_to_a_nice_top() -> None:
    writes = [float(n) for n in range(30)]  # 0 … 29
    recalls = [float(2 * n) for n in range(30)]  # 0 … 58
    html = daily_chart_svg(title="Usage, last 30 days", days=DAYS, series={"writes": writes, "recalls": recalls})
    svg = _svg(html)
    assert svg.get("role") == "img" and svg.get("viewBox") == "0 0 640 320"
    assert svg.get("aria-labelledby") == "usage-last-30-days-title usage-last-30-days-desc"
    assert svg.find(f"{SVG}title").text == "Usage, last 30 days"
    assert svg.find(f"{SVG}desc").text == "writes, recalls over 30 days; the largest value is 58"
    groups = svg.findall(f"{SVG}g[@class='series-0']") + svg.findall(f"{SVG}g[@class='series-1']")
    bars = [g.findall(f"{SVG}rect") for g in groups]
    assert [len(b) for b in bars] == [30, 30]
    # The axis' top is 100 (58 → the next 1-2-2.5-5 step); the plot is 228 high from y=14.
    tallest = bars[1][29]
    assert float(tallest.get("height")) == pytest.approx(228 * 58 / 100, abs=0.1)
    assert tallest.find(f"{SVG}title").text == "recalls: 58"
    assert float(bars[0][0].get("height")) == 0
    ticks = [
        t.text
        for t in svg.iter(f"{SVG}text")
        if t.get("text-anchor") == "end" and "rotate" not in (t.get("transform") or "")
    ]
    assert ticks == ["0", "25", "50", "75", "100"]
    # 30 days, 8 labels at most: every 4th day on the axis; all 30 in the table.
    labels = [t.text for t in svg.iter(f"{SVG}text") if "rotate" in (t.get("transform") or "")]
    assert labels == [DAYS[n].isoformat() for n in range(0, 30, 4)]
    assert html.count('<tr><th scope="row">') == 30
    assert '<tr><th scope="row">2026-11-30</th><td>29</td><td>58</td></tr>' in html
    assert '<li><span class="chart-swatch series-1" aria-hidden="true"></span>recalls</li>' in html


def test_a_budget_line_sets_the_top_when_it_is_higher_and_is_drawn_dashed_with_its_value() -> None:
    html = daily_chart_svg(title="Tokens", days=DAYS[:3], series={"tokens": [10.0, 40.0, 20.0]}, budget_line=180)
    svg = _svg(html)
    budget = svg.find(f"{SVG}g[@class='chart-budget']")
    line = budget.find(f"{SVG}line")
    assert float(line.get("y1")) == pytest.approx(14 + 228 - 228 * 180 / 200)  # top: 200
    assert budget.find(f"{SVG}text").text == "budget 180"
    assert svg.find(f"{SVG}desc").text.endswith("the budget is 180")


def test_a_line_chart_joins_the_days_points() -> None:
    svg = _svg(daily_chart_svg(title="Cost", days=DAYS[:4], series={"cost": [1.0, 2.0, 0.5, 4.0]}, kind="line"))
    polyline = svg.find(f"{SVG}g[@class='series-0']/{SVG}polyline")
    xs = [float(p.split(",")[0]) for p in polyline.get("points").split()]
    assert len(xs) == 4 and xs == sorted(xs)


def test_text_in_a_title_series_or_label_stays_text() -> None:
    hostile = '<script>alert("x")</script> & ]]>'
    html = chart_svg(title=hostile, categories=[hostile], series={hostile: [1.0]})
    assert "<script>" not in html and "]]>" not in html
    svg = _svg(html)  # still well-formed XML
    assert svg.find(f"{SVG}title").text == hostile
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; ]]&gt;" in html


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"days": DAYS[:2], "series": {"a": [1.0]}}, "series 'a' has 1 values for 2 categories"),
        ({"days": [DAYS[1], DAYS[0]], "series": {"a": [1.0, 2.0]}}, "days must be in increasing order, each once"),
        ({"days": DAYS[:1], "series": {}}, "a chart draws 1 to 6 series, not 0"),
        ({"days": DAYS[:1], "series": {"a": [1.0]}, "kind": "pie"}, "kind must be bar or line, not 'pie'"),
    ],
)
def test_bad_input_is_refused_with_what_is_wrong(kwargs, message) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        daily_chart_svg(title="t", **kwargs)


def test_nice_ceiling_steps() -> None:
    assert [nice_ceiling(v) for v in (0, 0.3, 1, 3, 7, 58, 180, 1001)] == [1, 0.5, 1, 5, 10, 100, 200, 2000]
