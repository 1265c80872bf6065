"""Inline SVG charts for the job report: pure functions from numbers to markup.

No scripts and no external resources: the report must open from a file on a
machine with no network. A Gantt chart of a big job would hold millions of
rectangles; attempts of one lane that touch the same pixel with the same status
are drawn as one, so the chart's size grows with its pixels, not with the job.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prsd.report.data import Attempt

STATUS_COLORS = {
    "succeeded": "#2e9e44",
    "failed": "#d62728",
    "timeout": "#ff7f0e",
    "crashed": "#9467bd",
    "oom": "#8c1c13",
    "requeued": "#7f7f7f",
}
SERIES_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")
FONT = 'font-family="sans-serif" font-size="11"'


def _ticks(span: float, count: int = 6) -> list[float]:
    if span <= 0:
        return [0.0]
    raw = span / count
    step = next(
        (
            s
            for s in (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200)
            if s >= raw
        ),
        3600 * max(round(raw / 3600), 1),
    )
    out, t = [], 0.0
    while t <= span + 1e-9:
        out.append(t)
        t += step
    return out


def _fmt_s(t: float) -> str:
    if t >= 3600:
        return f"{int(t // 3600)}h{int(t % 3600 // 60):02d}"
    if t >= 60:
        return f"{int(t // 60)}m{int(t % 60):02d}"
    return f"{t:g}s"


@dataclass
class _Rect:
    x: float
    w: float
    status: str
    title: str


def _rects(lane_attempts: list[Attempt], t0: float, scale: float, x0: float) -> list[_Rect]:
    """The rectangles of one lane; neighbours within half a pixel with one status merged."""
    out: list[_Rect] = []
    for a in sorted(lane_attempts, key=lambda a: a.start_s):
        x = x0 + (a.start_s - t0) * scale
        w = max(a.elapsed_s * scale, 0.8)
        last = out[-1] if out else None
        if last is not None and last.status == a.status and x <= last.x + last.w + 0.5:
            last.w = max(last.w, x + w - last.x)
            last.title = ""
            continue
        title = f"mini-batch {a.mini_batch} attempt {a.attempt}: {a.status}, {a.elapsed_s:.3f} s"
        if a.error:
            title += f" - {a.error}"
        out.append(_Rect(x, w, a.status, title))
    return out


def gantt_svg(attempts: list[Attempt], lanes: list[str], width: int = 1100) -> str:
    """Every attempt per worker lane on a time axis, coloured by status."""
    ran = [a for a in attempts if a.ran]
    label_w, lane_h, top = 150.0, 16, 24
    height = top + lane_h * max(len(lanes), 1) + 40
    if not ran:
        return _empty(width, 60, "no attempt ran", "gantt")
    t0 = min(a.start_s for a in ran)
    span = max(max(a.end_s for a in ran) - t0, 1e-3)
    scale = (width - label_w - 10) / span
    by_lane: dict[str, list[Attempt]] = {}
    for a in ran:
        by_lane.setdefault(a.lane, []).append(a)
    parts = [_svg_open(width, height, "gantt")]
    for t in _ticks(span):
        x = label_w + t * scale
        parts.append(
            f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{height - 34}" stroke="#ddd"/>'
        )
        parts.append(
            f'<text x="{x:.1f}" y="{top - 8}" {FONT} text-anchor="middle">{_fmt_s(t)}</text>'
        )
    for i, lane in enumerate(lanes):
        y = top + i * lane_h
        parts.append(f'<text x="4" y="{y + 12}" {FONT}>{escape(lane)}</text>')
        for r in _rects(by_lane.get(lane, []), t0, scale, label_w):
            color = STATUS_COLORS.get(r.status, "#444")
            tip = f"<title>{escape(r.title)}</title>" if r.title else ""
            parts.append(
                f'<rect class="attempt {escape(r.status)}" x="{r.x:.2f}" y="{y + 2}" '
                f'width="{r.w:.2f}" height="{lane_h - 4}" fill="{color}">{tip}</rect>'
            )
    parts.append(_legend(12, height - 18, sorted({a.status for a in ran})))
    parts.append("</svg>")
    return "\n".join(parts)


def _legend(x: float, y: float, statuses: list[str]) -> str:
    out = []
    for s in statuses:
        out.append(
            f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{STATUS_COLORS.get(s, "#444")}"/>'
        )
        out.append(f'<text x="{x + 14}" y="{y}" {FONT}>{escape(s)}</text>')
        x += 20 + 7 * len(s)
    return "\n".join(out)


def line_chart_svg(
    series: dict[str, list[tuple[float, float]]],
    *,
    width: int = 540,
    height: int = 200,
    y_label: str = "",
    y_max: float | None = None,
    chart_id: str = "",
) -> str:
    """Lines of (time, value) points sharing one time axis (seconds from the first point)."""
    points = [p for s in series.values() for p in s]
    if not points:
        return _empty(width, 60, "no samples", chart_id)
    left, right, top, bottom = 46.0, 10.0, 24.0 if y_label else 12.0, 40.0
    t0 = min(t for t, _ in points)
    span = max(max(t for t, _ in points) - t0, 1e-3)
    top_v = y_max if y_max is not None else max(max(v for _, v in points), 1e-9) * 1.1
    sx = (width - left - right) / span
    sy = (height - top - bottom) / top_v
    parts = [_svg_open(width, height, chart_id)]
    base = height - bottom
    parts.append(f'<line x1="{left}" y1="{base}" x2="{width - right}" y2="{base}" stroke="#999"/>')
    parts.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{base}" stroke="#999"/>')
    for frac in (0.0, 0.5, 1.0):
        y = base - frac * top_v * sy
        parts.append(
            f'<text x="{left - 4}" y="{y + 4:.1f}" {FONT} text-anchor="end">{_fmt_value(frac * top_v)}</text>'
        )
    for t in _ticks(span, 5):
        x = left + t * sx
        parts.append(
            f'<text x="{x:.1f}" y="{base + 14}" {FONT} text-anchor="middle">{_fmt_s(t)}</text>'
        )
    for i, (name, pts) in enumerate(series.items()):
        color = SERIES_COLORS[i % len(SERIES_COLORS)]
        path = " ".join(f"{left + (t - t0) * sx:.1f},{base - v * sy:.1f}" for t, v in pts)
        parts.append(
            f'<polyline class="series" fill="none" stroke="{color}" stroke-width="1.6" points="{path}"/>'
        )
        parts.append(
            f'<text x="{left + 8 + i * 150}" y="{height - 8}" {FONT} fill="{color}">{escape(name)}</text>'
        )
    if y_label:
        parts.append(f'<text x="4" y="10" {FONT}>{escape(y_label)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def bars_svg(labels: list[str], values: list[float], *, width: int = 700, unit: str = "s") -> str:
    """Horizontal bars, longest first (the slowest mini-batches)."""
    if not values:
        return _empty(width, 40, "nothing to show", "slowest-chart")
    row_h, label_w = 16, 190.0
    height = row_h * len(values) + 8
    top_v = max(max(values), 1e-9)
    scale = (width - label_w - 70) / top_v
    parts = [_svg_open(width, height, "slowest-chart")]
    for i, (label, v) in enumerate(zip(labels, values, strict=True)):
        y = 4 + i * row_h
        parts.append(f'<text x="4" y="{y + 11}" {FONT}>{escape(label)}</text>')
        parts.append(
            f'<rect class="bar" x="{label_w}" y="{y + 1}" width="{max(v * scale, 1):.1f}" '
            f'height="{row_h - 4}" fill="#1f77b4"/>'
        )
        parts.append(
            f'<text x="{label_w + v * scale + 4:.1f}" y="{y + 11}" {FONT}>{v:.3f} {unit}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


def _fmt_value(v: float) -> str:
    return f"{v:,.0f}" if v >= 10 else f"{v:.2g}"


def _svg_open(width: float, height: float, chart_id: str) -> str:
    ident = f' id="{chart_id}"' if chart_id else ""
    return (
        f'<svg{ident} xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">'
    )


def _empty(width: float, height: float, text: str, chart_id: str = "") -> str:
    return (
        _svg_open(width, height, chart_id)
        + f'<text x="8" y="24" {FONT}>{escape(text)}</text></svg>'
    )
