"""``prsctl report JOB -o report.html``: one self-contained HTML file, plus its data as CSV.

The page holds a summary (state, counts, the first error), a Gantt chart of every
attempt per worker coloured by status, throughput over time, the slowest
mini-batches and each node's resource use; everything is inline (CSS and SVG, no
script, no network). Beside it, ``<name>.attempts.csv``, ``<name>.throughput.csv``,
``<name>.slowest.csv`` and ``<name>.resources.csv`` hold the same data for notebooks.
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from html import escape
from typing import TYPE_CHECKING, Any

from prsd.report.data import ReportData, lanes, load_report_data, slowest, throughput
from prsd.report.svg import STATUS_COLORS, bars_svg, gantt_svg, line_chart_svg
from prsd.spool.atomic import write_atomic

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.spool.layout import JobLayout

CSS = """
body { font-family: sans-serif; margin: 24px; color: #222; max-width: 1180px; }
h1 { font-size: 20px; margin-bottom: 4px; } h2 { font-size: 16px; margin-top: 28px; }
h3 { font-size: 13px; margin: 4px 0; }
.state { font-weight: bold; padding: 2px 8px; border-radius: 4px; color: white; }
.Completed { background: #2e9e44; } .Failed { background: #d62728; }
.Completed-with-failures { background: #e69a00; }
.Canceled { background: #b8860b; } .Running { background: #1f77b4; }
table.facts td { padding: 2px 14px 2px 0; }
table.grid { border-collapse: collapse; font-size: 12px; }
table.grid td, table.grid th { border: 1px solid #ddd; padding: 3px 8px; text-align: left; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; font-size: 12px; }
.nodes { display: flex; flex-wrap: wrap; gap: 16px; }
"""


def write_report(layout: JobLayout, out: Path) -> list[Path]:
    """Write the HTML report and its CSV files; returns their paths (HTML first).

    Raises:
        FileNotFoundError: the job has not reported any attempt yet.
    """
    data = load_report_data(layout)
    out.parent.mkdir(parents=True, exist_ok=True)
    html = render_html(data, datetime.now(UTC))
    write_atomic(out, html.encode(), durable=False)
    paths = [out]
    for suffix, text in csv_files(data).items():
        path = out.with_name(f"{out.stem}.{suffix}.csv")
        write_atomic(path, text.encode(), durable=False)
        paths.append(path)
    return paths


def _csv(header: list[str], rows: list[list[Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def csv_files(data: ReportData) -> dict[str, str]:
    """The report's data as CSV texts: attempts, throughput, slowest, resources."""
    attempt_cols = ["mini_batch_id", "attempt", "status", "node_id", "process_name", "items",
                    "succeeded_items", "start_epoch_s", "end_epoch_s", "elapsed_s", "run_method_s",
                    "error"]  # fmt: skip
    attempts = [
        [a.mini_batch, a.attempt, a.status, a.node_id, a.process_name, a.items,
         a.succeeded_items, f"{a.start_s:.3f}" if a.ran else "",
         f"{a.end_s:.3f}" if a.ran else "", f"{a.elapsed_s:.6f}", f"{a.run_method_s:.6f}", a.error]
        for a in data.attempts
    ]  # fmt: skip
    tp = [[f"{t:.3f}", f"{r:.4f}"] for t, r in throughput(data.attempts)]
    slow = [
        [a.mini_batch, a.attempt, a.status, a.lane, f"{a.elapsed_s:.6f}", f"{a.run_method_s:.6f}"]
        for a in slowest(data.attempts)
    ]
    res = [
        [n.node_id, col, f"{t:.3f}", f"{v:.2f}"]
        for n in data.nodes
        for col, pts in n.series.items()
        for t, v in pts
    ]
    return {
        "attempts": _csv(attempt_cols, attempts),
        "throughput": _csv(["bin_start_epoch_s", "attempts_per_s"], tp),
        "slowest": _csv(
            ["mini_batch_id", "attempt", "status", "worker", "elapsed_s", "run_method_s"], slow
        ),
        "resources": _csv(["node_id", "column", "epoch_s", "value"], res),
    }


def _summary(data: ReportData) -> str:
    s = data.status
    state = str(s.get("state", "?"))
    css_class = state.replace(" ", "-")  # "Completed with failures": amber
    total = s.get("total_mbs")
    facts = [
        ("Mini-batches", (f"{s.get('succeeded_mbs', 0)} succeeded, {s.get('failed_mbs', 0)} "
                          f"failed of {total if total is not None else '?'}")),
        ("Items", f"{s.get('succeeded_items', 0)} of {s.get('items', 0)} succeeded"),
        ("Attempts", f"{len(data.attempts)} ({s.get('requeues', 0)} requeued)"),
        ("Workers", str(len(lanes(data.attempts)))),
        ("Elapsed", f"{s.get('elapsed_s', 0)} s"),
        ("Output", str(s.get("output", "") or "-")),
    ]  # fmt: skip
    rows = "".join(f"<tr><td>{escape(k)}</td><td>{escape(v)}</td></tr>" for k, v in facts)
    out = [
        (
            f'<h1>Job {escape(data.job_id)} <span class="state {escape(css_class)}">{escape(state)}'
            "</span></h1>"
        ),
        f"<p>{escape(str(s.get('reason', '')))}</p>",
        f'<table class="facts" id="summary">{rows}</table>',
    ]
    if s.get("first_error"):
        out.append(f'<h2>First error</h2><pre id="first-error">{escape(s["first_error"])}</pre>')
    return "\n".join(out)


def _slowest_section(data: ReportData) -> str:
    slow = slowest(data.attempts)
    labels = [f"{a.mini_batch} a{a.attempt} {a.lane}" for a in slow]
    chart = bars_svg(labels, [a.elapsed_s for a in slow])
    rows = "".join(
        f"<tr><td>{escape(a.mini_batch)}</td><td>{a.attempt}</td><td>{escape(a.status)}</td>"
        f"<td>{escape(a.lane)}</td><td>{a.elapsed_s:.3f}</td><td>{a.run_method_s:.3f}</td></tr>"
        for a in slow
    )
    table = (
        '<table class="grid" id="slowest"><tr><th>mini-batch</th><th>attempt</th><th>status</th>'
        f"<th>worker</th><th>elapsed s</th><th>run() s</th></tr>{rows}</table>"
    )
    return f"<h2>Slowest mini-batches</h2>{chart}{table}"


def _resources_section(data: ReportData) -> str:
    if not data.nodes:
        return (
            '<h2>Resource use per node</h2><p id="resources">No samples: the resource monitor '
            "was off (resource_monitor_interval: 0) or the job was too short.</p>"
        )
    charts = "".join(
        f'<div class="node"><h3>{escape(n.node_id)}</h3>'
        + line_chart_svg(n.series, y_label="percent", y_max=100.0, chart_id=f"res-{n.node_id}")
        + "</div>"
        for n in data.nodes
    )
    return f'<h2>Resource use per node</h2><div class="nodes" id="resources">{charts}</div>'


def render_html(data: ReportData, generated: datetime) -> str:
    """The whole report as one HTML document."""
    tp = throughput(data.attempts)
    sections = [
        _summary(data),
        "<h2>Attempts per worker</h2>",
        gantt_svg(data.attempts, lanes(data.attempts)),
        "<h2>Throughput</h2>",
        line_chart_svg(
            {"attempts finished per second": tp},
            width=1100,
            y_label="attempts/s",
            chart_id="throughput",
        ),
        _resources_section(data),
        _slowest_section(data),
        (
            f"<p><small>Generated {generated.isoformat(timespec='seconds')} by prsctl report. "
            f"Colours: {', '.join(f'{k} {v}' for k, v in STATUS_COLORS.items())}.</small></p>"
        ),
    ]
    body = "\n".join(sections)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>prsd job {escape(data.job_id)}</title><style>{CSS}</style></head>"
        f"<body>\n{body}\n</body></html>\n"
    )
