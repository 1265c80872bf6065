"""The job-wide init rules (docs/supervision.md), as a pure function over the nodes' reports.

While no ``init()`` has succeeded anywhere:

1. Every node that served the job stopped starting workers (each after
   ``3 * max_concurrency_per_instance`` init failures in a row): the job fails now;
   nothing can run it.
2. After 2 minutes, ``2 * nodes * max_concurrency_per_instance`` init failures: the
   job fails.
3. Every worker stayed in ``init()`` longer than ``3 * timeout + 30`` seconds: the
   nodes stop such workers at that deadline (stacks dumped into their error file)
   and report them as init timeouts; once there are as many as workers, the job
   fails, without waiting for replacements to hang as long again.

When rule 1 ends a job because the entry script itself cannot be used (it defines
no ``run()``, its name cannot be imported), the reason names that, not a count of
init() failures.

The 2 minutes and the 30 seconds are Azure's constants; an operator may shorten
them (:mod:`prsd.tunables`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from prsd.tunables import init_rule_window_s

if TYPE_CHECKING:
    from prsd.spool.envrecord import EnvBuild
    from prsd.spool.initrecords import InitError
    from prsd.spool.nodereport import NodeReport


INIT_RULE_AFTER_S = init_rule_window_s()
SCRIPT_ERROR = "EntryScriptError: "  # the worker's error for a script it cannot use


@dataclass(frozen=True)
class NodeInit:
    node_id: str
    workers: int
    successes: int
    failures: int
    gave_up: bool
    first_error: InitError | None
    timeouts: int = 0  # workers stopped for staying in init() past the deadline
    environment: EnvBuild | None = None  # the node's environment build, as reported

    @classmethod
    def from_report(cls, report: NodeReport) -> NodeInit:
        return cls(
            report.node_id,
            report.workers if report.workers is not None else 1,
            report.init_successes,
            report.init_failures,
            report.gave_up,
            report.first_init_error,
            report.init_timeouts,
            report.environment,
        )


def init_failure(
    reports: list[NodeInit], elapsed_s: float, window_s: float = INIT_RULE_AFTER_S
) -> str | None:
    """The reason the job fails for init(), or None while it may go on."""
    if not reports or any(r.successes for r in reports):
        return None
    failures = sum(r.failures for r in reports)
    workers = sum(r.workers for r in reports)
    if all(r.gave_up for r in reports) and all(_environment(r) for r in reports):
        # Building the job's environment failed: the tool's own error line first.
        r = reports[0]
        where = r.first_error.build_log if r.first_error else ""
        return (
            f"{_environment(r)} (building the job's environment on node {r.node_id}; see {where})"
        )
    script = _script_error(reports)
    if all(r.gave_up for r in reports) and script:
        return f"{script}: no worker could start, so no mini-batch ran"
    if all(r.gave_up for r in reports):
        return f"init() failed {failures} times and every node stopped starting workers: " + (
            _first(reports)
        )
    timeouts = sum(r.timeouts for r in reports)
    if timeouts >= workers:
        return (
            f"every worker stayed in init() past its deadline ({timeouts} init timeouts, "
            f"{workers} workers): " + _first(reports)
        )
    limit = 2 * workers
    if elapsed_s >= window_s and failures >= limit:
        return (
            f"init() failed {failures} times in {elapsed_s:.0f} s (limit 2 x nodes x workers = "
            f"{limit}) with no success: " + _first(reports)
        )
    return None


def _environment(report: NodeInit) -> str:
    e = report.first_error
    return e.error if e and e.environment else ""


def _script_error(reports: list[NodeInit]) -> str:
    """The first error when it is the entry script's own shape (no ``run()``, a name
    that cannot be imported), with where it was met; "" for any other error."""
    for r in reports:
        e = r.first_error
        if e:
            if not e.error.startswith(SCRIPT_ERROR):
                return ""
            return f"{e.error.removeprefix(SCRIPT_ERROR)} ({e.process_name or '?'} on node {r.node_id})"
    return ""


def _first(reports: list[NodeInit]) -> str:
    for r in reports:
        e = r.first_error
        if e:
            where = f"{e.process_name or '?'} on node {r.node_id}"
            return f"{e.error or 'unknown error'} ({where})"
    return "no error was reported"


def first_error_detail(reports: list[NodeInit]) -> str:
    """The first init error's traceback tail and file, for job_result.txt."""
    for r in reports:
        e = r.first_error
        if e:
            lines = [f"  {line}" for line in e.traceback_tail.rstrip().splitlines()]
            if e.error_file:
                lines.append(f"Full traceback: {e.error_file}")
            return "\n".join(lines)
    return ""
