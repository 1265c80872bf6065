"""The job report's pure parts: derived series and SVG drawing."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from prsd.report.data import Attempt, lanes, slowest, throughput
from prsd.report.svg import STATUS_COLORS, bars_svg, gantt_svg, line_chart_svg

T0 = 1_800_000_000.0


def _a(
    mb: int, start: float, elapsed: float, status: str = "succeeded", proc: str = "process000"
) -> Attempt:
    return Attempt(f"{mb:09d}", 1, status, "n1", proc, 1, 1, T0 + start, elapsed, elapsed, "")


def test_throughput_bins_cover_the_span_and_count_every_attempt() -> None:
    """Rates times bin width add up to the attempts that ran; requeued ones are left out."""
    attempts = [_a(i, i * 0.5, 0.5) for i in range(20)]
    attempts.append(Attempt("000000099", 2, "requeued", "n1", "", 0, 0, 0.0, 0.0, 0.0, ""))
    bins = throughput(attempts, bins=10)
    width = bins[1][0] - bins[0][0]
    assert len(bins) == 10
    assert round(sum(rate * width for _, rate in bins)) == 20
    assert bins[0][0] == T0


def test_slowest_and_lanes() -> None:
    """The slowest attempts come first; lanes are node/process, sorted."""
    attempts = [_a(1, 0, 1.0, proc="process001"), _a(2, 0, 3.0), _a(3, 1, 2.0)]
    assert [a.mini_batch for a in slowest(attempts, 2)] == ["000000002", "000000003"]
    assert lanes(attempts) == ["n1/process000", "n1/process001"]


def test_gantt_draws_each_attempt_coloured_by_status() -> None:
    """Separate attempts are separate rectangles in their status colour, with a tooltip."""
    attempts = [_a(0, 0, 10), _a(1, 20, 10, "failed"), _a(2, 40, 10, "timeout", "process001")]
    svg = gantt_svg(attempts, lanes(attempts), width=1000)
    root = ET.fromstring(svg)
    rects = [
        r for r in root.iter("{http://www.w3.org/2000/svg}rect") if "attempt" in r.get("class", "")
    ]
    assert [r.get("fill") for r in rects] == [
        STATUS_COLORS["succeeded"],
        STATUS_COLORS["failed"],
        STATUS_COLORS["timeout"],
    ]
    assert "mini-batch 000000001 attempt 1: failed" in svg


def test_gantt_merges_attempts_within_a_pixel() -> None:
    """Ten thousand tiny attempts on one lane do not make ten thousand rectangles."""
    attempts = [_a(i, i * 0.001, 0.001) for i in range(10_000)]
    attempts.append(_a(10_000, 10.0, 0.001, "failed"))
    svg = gantt_svg(attempts, lanes(attempts), width=1000)
    drawn = re.findall(r'<rect class="attempt (\w+)"', svg)
    assert drawn == ["succeeded", "failed"]


def test_line_chart_and_bars_are_well_formed() -> None:
    """Charts parse as XML; an empty chart says why."""
    ET.fromstring(line_chart_svg({"cpu": [(T0, 10.0), (T0 + 5, 50.0)]}, y_max=100, chart_id="c"))
    ET.fromstring(bars_svg(["a", "b"], [2.0, 1.0]))
    assert "no samples" in line_chart_svg({}, chart_id="c")
