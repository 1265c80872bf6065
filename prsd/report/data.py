"""The facts a job report shows, read from the job's log tree (no spool scanning).

Sources: ``logs/sys/job_report/processed_mini-batches.csv`` (every attempt),
``state/status.json`` (the summary), ``logs/perf/<node>/node_resource_usage.csv``
(resource use). The derivations (lanes, throughput, slowest) are pure functions of
those rows.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from prsd.spool.statusfiles import merged_with_private_file, read_status_document
from prsd.wire.logtree import NODE_USAGE_FILE

if TYPE_CHECKING:
    from prsd.spool.layout import JobLayout


@dataclass(frozen=True)
class Attempt:
    mini_batch: str
    attempt: int
    status: str
    node_id: str
    process_name: str
    items: int
    succeeded_items: int
    start_s: float  # epoch seconds; 0 when the attempt never ran
    elapsed_s: float
    run_method_s: float
    error: str

    @property
    def lane(self) -> str:
        return f"{self.node_id}/{self.process_name}"

    @property
    def end_s(self) -> float:
        return self.start_s + self.elapsed_s

    @property
    def ran(self) -> bool:
        return self.start_s > 0 and bool(self.process_name)


@dataclass(frozen=True)
class NodeSeries:
    """One node's resource use over time: column name -> [(epoch s, value)]."""

    node_id: str
    series: dict[str, list[tuple[float, float]]] = field(default_factory=dict)


@dataclass(frozen=True)
class ReportData:
    job_id: str
    status: dict[str, Any]
    attempts: list[Attempt]
    nodes: list[NodeSeries]


def parse_time(text: str) -> float:
    """Epoch seconds of an ISO 8601 UTC time (``Z`` or an offset); 0.0 when empty or bad."""
    if not text:
        return 0.0
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return 0.0


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return 0


def attempt_from_row(row: dict[str, str]) -> Attempt:
    return Attempt(
        mini_batch=row.get("mini_batch_id", ""),
        attempt=_int(row.get("attempt", "")),
        status=row.get("status", ""),
        node_id=row.get("node_id", ""),
        process_name=row.get("process_name", ""),
        items=_int(row.get("items", "")),
        succeeded_items=_int(row.get("succeeded_items", "")),
        start_s=parse_time(row.get("start_time", "")),
        elapsed_s=_float(row.get("elapsed_s", "")),
        run_method_s=_float(row.get("run_method_s", "")),
        error=row.get("error", ""),
    )


RESOURCE_COLUMNS = ("Cpu Percent", "Memory Used Percent")


def read_node_series(path_csv: Any, node_id: str) -> NodeSeries:
    """CPU, memory and per-GPU utilisation of a node from its node_resource_usage.csv."""
    series: dict[str, list[tuple[float, float]]] = {}
    with open(path_csv, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            t = parse_time(row.get("Utc Time", ""))
            if not t:
                continue
            for col, value in row.items():
                wanted = col in RESOURCE_COLUMNS or (
                    col.startswith("Gpu ") and col.endswith("Utilization Percent")
                )
                if wanted and value not in ("", None):
                    series.setdefault(col, []).append((t, _float(value)))
    return NodeSeries(node_id, series)


def load_report_data(layout: JobLayout) -> ReportData:
    """Everything the report shows about one job.

    Raises:
        FileNotFoundError: the job has no attempt report yet.
    """
    path = layout.log_tree.report_csv
    with open(path, newline="", encoding="utf-8") as f:
        attempts = [attempt_from_row(r) for r in csv.DictReader(f)]
    try:
        found = read_status_document(layout)
    except OSError:
        found = None
    status = (
        merged_with_private_file(found, layout.state)
        if found is not None
        else {"job_id": layout.job_id, "state": "?"}
    )
    tree = layout.log_tree
    usage = tree.pattern(tree.perf("*") / NODE_USAGE_FILE)
    nodes = [read_node_series(p, p.parent.name) for p in sorted(tree.root.glob(usage))]
    return ReportData(layout.job_id, status, attempts, nodes)


def throughput(attempts: list[Attempt], bins: int = 60) -> list[tuple[float, float]]:
    """Attempts finished per second over the job's span, in ``bins`` equal steps.

    Returns (bin start, epoch seconds; rate) pairs; empty when nothing ran.
    """
    ran = [a for a in attempts if a.ran]
    if not ran:
        return []
    t0 = min(a.start_s for a in ran)
    t1 = max(a.end_s for a in ran)
    width = max((t1 - t0) / bins, 1e-3)
    counts = [0] * bins
    for a in ran:
        counts[min(int((a.end_s - t0) / width), bins - 1)] += 1
    return [(t0 + i * width, c / width) for i, c in enumerate(counts)]


def slowest(attempts: list[Attempt], n: int = 20) -> list[Attempt]:
    """The ``n`` attempts that took longest (ran ones only)."""
    return sorted((a for a in attempts if a.ran), key=lambda a: -a.elapsed_s)[:n]


def lanes(attempts: list[Attempt]) -> list[str]:
    """Worker lanes (node/process) in a stable order."""
    return sorted({a.lane for a in attempts if a.ran})
