"""SPEC section 4's job-wide init rules, as a pure function over the nodes' reports.

- Every node that served the job stopped starting workers (each after
  ``3 * max_concurrency_per_instance`` init failures in a row) and no init ever
  succeeded: the job fails now; nothing can run it.
- After 2 minutes, ``2 * nodes * max_concurrency_per_instance`` init failures and not a
  single successful init: the job fails.
- Workers stuck in ``init()`` past ``3 * timeout + 30`` seconds are stopped by their
  node and count as init failures, so the third rule feeds the two above.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

INIT_RULE_AFTER_S = 120.0


@dataclass(frozen=True)
class NodeInit:
    node_id: str
    workers: int
    successes: int
    failures: int
    gave_up: bool
    first_error: dict[str, Any] | None

    @classmethod
    def from_report(cls, report: dict[str, Any]) -> NodeInit:
        return cls(
            str(report.get("node_id", "?")),
            int(report.get("workers", 1)),
            int(report.get("init_successes", 0)),
            int(report.get("init_failures", 0)),
            bool(report.get("gave_up", False)),
            report.get("first_init_error"),
        )


def init_failure(reports: list[NodeInit], elapsed_s: float) -> str | None:
    """The reason the job fails for init(), or None while it may go on."""
    if not reports or any(r.successes for r in reports):
        return None
    failures = sum(r.failures for r in reports)
    if all(r.gave_up for r in reports):
        return f"init() failed {failures} times and every node stopped starting workers: " + (
            _first(reports)
        )
    limit = 2 * sum(r.workers for r in reports)
    if elapsed_s >= INIT_RULE_AFTER_S and failures >= limit:
        return (
            f"init() failed {failures} times (limit 2 x nodes x workers = {limit}) with no success: "
            + (_first(reports))
        )
    return None


def _first(reports: list[NodeInit]) -> str:
    for r in reports:
        e = r.first_error
        if e:
            where = f"{e.get('process_name', '?')} on node {r.node_id}"
            return f"{e.get('error', 'unknown error')} ({where})"
    return "no error was reported"


def first_error_detail(reports: list[NodeInit]) -> str:
    """The first init error's traceback tail and file, for job_result.txt."""
    for r in reports:
        e = r.first_error
        if e:
            lines = [f"  {line}" for line in str(e.get("traceback_tail", "")).rstrip().splitlines()]
            if e.get("error_file"):
                lines.append(f"Full traceback: {e['error_file']}")
            return "\n".join(lines)
    return ""
