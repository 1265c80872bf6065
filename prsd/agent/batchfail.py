"""What a mini-batch that never returned from its worker records: pure texts and values.

A mini-batch whose worker ran out of time or died gets a failed
:class:`~prsd.wire.records.Outcome` from the agent (the worker could not send
one). Its error text is the same for every failure of one kind, so
``user/error.txt`` counts them on one line; process and mini-batch have their own
columns.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from prsd.agent.verdicts import classify_exit, oom_reason
from prsd.wire.records import OOM, Outcome

if TYPE_CHECKING:
    from prsd.agent.verdicts import ExitInfo, MemoryEvidence
    from prsd.wire.records import MiniBatch


def timeout_error(*, running: bool, timeout_s: float, overhead_s: float) -> str:
    """Why a mini-batch timed out: in ``run()``, or before it (loading it)."""
    if running:
        return (
            f"run() did not return within {timeout_s:g} s (retry_settings.timeout); "
            "its stacks are in the worker's error file"
        )
    return (
        f"loading the mini-batch took longer than {overhead_s:g} s "
        "(task_overhead_timeout); its stacks are in the worker's error file"
    )


def death(exit_info: ExitInfo, evidence: MemoryEvidence) -> tuple[str, str]:
    """(status, error) of a mini-batch whose worker died running it (crashed or oom)."""
    status = classify_exit(exit_info, timed_out=False, memory=evidence)
    error = f"the worker died: {exit_info.summary()}"
    if status == OOM:
        error += f" ({oom_reason(evidence)})"
    return status, error


def failed_outcome(
    mb: MiniBatch,
    status: str,
    error: str,
    *,
    elapsed_s: float,
    process_name: str,
    pid: int,
    error_file: str,
) -> Outcome:
    """The outcome the agent records for mini-batch ``mb``."""
    items = max(mb.items, 0)
    return Outcome(
        index=mb.index,
        status=status,
        items=items,
        failed_items=items,
        process_name=process_name,
        pid=pid,
        start_time=datetime.now(UTC).isoformat(timespec="milliseconds"),
        elapsed_s=elapsed_s,
        error=error,
        error_file=error_file,
    )
