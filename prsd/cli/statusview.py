"""``prsctl status`` views, built with rich from status documents and heartbeats.

The views are pure: plain documents in, rich renderables out. The command decides
whether to print them once, redraw them in place (``--watch``) or print JSON.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from prsd.spool.durations import format_duration

if TYPE_CHECKING:
    from rich.console import RenderableType

STATE_STYLE = {
    "Completed": "green",
    "Completed with failures": "dark_orange",  # amber: the output lacks rows
    "Failed": "red",
    "Canceled": "yellow",
    "Running": "cyan",
    "Queued": "dim",
    "Starting": "dim",
}


def _int(doc: dict[str, Any], key: str) -> int:
    value = doc.get(key)
    return value if isinstance(value, int) else 0


def finished(doc: dict[str, Any]) -> int:
    return _int(doc, "succeeded_mbs") + _int(doc, "failed_mbs")


def total_text(doc: dict[str, Any]) -> str:
    total = doc.get("total_mbs")
    if isinstance(total, int):
        return str(total)
    planned = _int(doc, "planned_mbs")
    return f"{planned}+" if planned else "?"


def eta_text(doc: dict[str, Any]) -> str:
    if doc.get("state") != "Running":
        return "-"
    eta = doc.get("eta_s")
    return format_duration(eta) if isinstance(eta, int | float) else "?"


def state_text(state: str) -> Text:
    return Text(state, style=STATE_STYLE.get(state, ""))


def jobs_table(docs: list[dict[str, Any]]) -> Table:
    """Every job, one row each (``prsctl status``)."""
    table = Table(box=None, pad_edge=False, header_style="bold")
    longest = max((len(str(d.get("job_id", "?"))) for d in docs), default=3)
    for col, justify in (
        ("JOB", "left"),
        ("STATE", "left"),
        ("DONE", "right"),
        ("TOTAL", "right"),
        ("FAILED", "right"),
        ("RATE/s", "right"),
        ("ELAPSED", "right"),
        ("ETA", "right"),
    ):
        table.add_column(  # a job id is never wrapped nor cut: it is copied into commands
            col,
            justify=justify,  # type: ignore[arg-type]
            no_wrap=True,
            overflow="ellipsis",
            min_width={"JOB": longest, "STATE": 9}.get(col, len(col)),
        )
    for d in docs:
        elapsed = d.get("elapsed_s")
        table.add_row(
            str(d.get("job_id", "?")),
            state_text(str(d.get("state", "?"))),
            str(finished(d)),
            total_text(d),
            str(_int(d, "failed_mbs")),
            f"{d.get('rate_mbs_per_s', 0) or 0:.2f}",
            format_duration(elapsed) if isinstance(elapsed, int | float) else "-",
            eta_text(d),
        )
    return table


def progress_bar(doc: dict[str, Any], width: int = 50) -> ProgressBar:
    total = doc.get("total_mbs")
    planned = _int(doc, "planned_mbs")
    bar_total = float(total) if isinstance(total, int) and total > 0 else float(max(planned, 1))
    return ProgressBar(total=bar_total, completed=float(finished(doc)), width=width)


def job_view(doc: dict[str, Any], nodes: list[dict[str, Any]]) -> RenderableType:
    """One job: progress bar, counts, rate, ETA, nodes and the last errors."""
    state = str(doc.get("state", "?"))
    head = Text.assemble(
        (str(doc.get("job_id", "?")), "bold"), "  ", state_text(state), f"  {doc.get('reason', '')}"
    )
    done, total = finished(doc), total_text(doc)
    pct = ""
    if isinstance(doc.get("total_mbs"), int) and doc["total_mbs"] > 0:
        pct = f" {100 * done / doc['total_mbs']:.1f}%"
    line = Text(f"{done} of {total} mini-batches{pct}")
    counts = Text(
        f"succeeded {_int(doc, 'succeeded_mbs')}  failed {_int(doc, 'failed_mbs')}  "
        f"partial {_int(doc, 'partial_mbs')}  attempts {_int(doc, 'attempts')}  "
        f"requeued {_int(doc, 'requeues')}  items {_int(doc, 'succeeded_items')}/"
        f"{_int(doc, 'items')} succeeded"
    )
    elapsed = doc.get("elapsed_s")
    timing = Text(
        f"rate {doc.get('rate_mbs_per_s', 0) or 0:.2f} mini-batches/s  elapsed "
        f"{format_duration(elapsed) if isinstance(elapsed, int | float) else '-'}  "
        f"ETA {eta_text(doc)}"
    )
    bar = Table.grid(padding=(0, 1))
    bar.add_row(progress_bar(doc), line)
    parts: list[RenderableType] = [head, bar, counts, timing]
    if doc.get("output"):
        parts.append(Text(f"output {doc['output']}"))
    if nodes:
        parts.extend([Text("nodes", style="bold"), nodes_table(nodes)])
    parts.extend(_errors(doc))
    notes = [n for n in doc.get("notes") or [] if isinstance(n, dict)]
    if notes:
        parts.append(Text("notes", style="bold"))
        parts.extend(Text(f"  {n.get('group')}: {n.get('text')}") for n in notes)
    return Group(*parts)


def _errors(doc: dict[str, Any]) -> list[RenderableType]:
    out: list[RenderableType] = []
    first = doc.get("first_error")
    if first:
        out.extend([Text("first error", style="bold red"), Text(str(first))])
    last = doc.get("last_errors") or []
    if last:
        out.append(Text("last errors", style="bold"))
        out.extend(
            Text(
                f"  mini-batch {e.get('mini_batch')} (attempt {e.get('attempt')}) on "
                f"{e.get('node_id')}/{e.get('process_name') or '-'}: {e.get('error')}"
            )
            for e in last
        )
    groups = doc.get("errors") or []
    if groups:
        out.append(Text("errors by kind", style="bold"))
        out.extend(Text(f"  {g.get('count')} x {g.get('message')}") for g in groups)
    return out


def nodes_table(rows: list[dict[str, Any]]) -> Table:
    """Nodes: slots, GPUs, heartbeat age and what they run (``prsctl nodes``, job view)."""
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("NODE", "HOST", "SLOTS", "GPUS", "HEARTBEAT", "WORKERS", "BUSY", "RUNNING"):
        table.add_column(col, no_wrap=col != "RUNNING")
    for r in rows:
        age = r.get("heartbeat_age_s")
        beat = "-" if age is None else f"{age:.0f}s ago"
        if r.get("drained"):
            beat += " (drained)"
        elif r.get("stale"):
            beat += " (stale)"
        if r.get("fault"):
            beat += f" ({r['fault']})"
        if r.get("conflict"):
            beat += f" (node id also used by {r['conflict']})"
        table.add_row(
            str(r.get("node_id")),
            str(r.get("host", "")),
            str(r.get("slots", "")),
            str(r.get("gpus", "")),
            Text(beat, style="red" if r.get("stale") else ""),
            str(r.get("workers", 0)),
            str(r.get("busy", 0)),
            ", ".join(r.get("running", []))[:80] or "-",
        )
    return table
