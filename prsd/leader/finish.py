"""Ending a job: the output, the result files, and the markers agents watch.

Order matters: the append_row file is published (renamed into place) before
``final.json`` says Completed, and ``active/<job>`` is removed last, so anyone who
sees the job ended also sees its output.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from prsd.errors import ExitCode
from prsd.leader.joblogs import format_duration
from prsd.leader.partial import keep_partial_output
from prsd.leader.rerun import combine_outputs
from prsd.storage.atomic import write_atomic

if TYPE_CHECKING:
    from prsd.leader.job import JobDriver

EXIT_CODES = {
    "Completed": ExitCode.OK,
    "Failed": ExitCode.JOB_FAILED,
    "Canceled": ExitCode.JOB_CANCELED,
}


@dataclass(frozen=True)
class FinalState:
    """How a job ended (``state/final.json``)."""

    state: str  # Completed | Failed | Canceled
    reason: str
    exit_code: int
    output: str
    root_cause: str
    finished_at: str

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), indent=1).encode()

    @classmethod
    def from_json(cls, data: bytes) -> FinalState:
        return cls(**json.loads(data))


def finish_job(driver: JobDriver, state: str, reason: str, now: float) -> FinalState:
    """Publish or drop the output and write every end-of-job file."""
    layout = driver.layout
    output = ""
    if driver.merge is not None:
        if state == "Completed":
            output = str(driver.merge.finish())
            write_header = driver.spec.append_row_dataframe_header
            combine_outputs(layout, driver.merge.out_path, write_header=write_header)
        else:
            output = keep_partial_output(driver, state)
    root = ""
    if state == "Failed":
        root = driver.errors.root_cause() or driver.init_detail
    text = result_text(driver, state, reason, output, root, now)
    summary = driver.errors.summary(poison_items(driver))
    write_atomic(layout.logs / "job_error.txt", summary.encode())
    (layout.logs / "user").mkdir(parents=True, exist_ok=True)
    write_atomic(layout.logs / "user" / "error.txt", summary.encode())
    driver.logs.result(text)
    final = FinalState(
        state,
        reason,
        int(EXIT_CODES[state]),
        output,
        root,
        datetime.now(UTC).isoformat(timespec="seconds"),
    )
    write_atomic(layout.final, final.to_json())
    driver.logs.progress(
        f"{driver.progress_line(now)} The job is {state.lower()}. {reason}".strip()
    )
    driver.logs.master(f"job {state}: {reason or 'all mini-batches processed'}")
    _remove_active_marker(layout.root.parent.parent / "active" / layout.job_id)
    return final


def result_text(
    driver: JobDriver, state: str, reason: str, output: str, root_cause: str, now: float
) -> str:
    """The content of logs/job_result.txt: state, the reason, then where to look."""
    c = driver.ledger.counts()
    total: int | str = (
        c.total_mbs if c.total_mbs is not None else f"{len(driver.ledger)} planned so far"
    )
    lines = [state]
    if state == "Failed":
        lines.append(f"Reason: {reason}")
        if root_cause:
            lines.append(root_cause)
    elif reason:
        lines.append(reason)
    lines.append(
        f"Processed {c.finished_mbs} of {total} mini-batches in "
        f"{format_duration(now - driver.started)}: {c.succeeded_mbs} succeeded, "
        f"{c.failed_mbs} failed; {c.succeeded_items} of {c.items} items succeeded."
    )
    if output:
        lines.append(f"Output: {output}")
    lines.append(f"Logs: {driver.layout.logs} (see readme.txt there for the layout)")
    return "\n".join(lines) + "\n"


def poison_items(driver: JobDriver) -> list[object]:
    """The inputs bisection isolated (``bisect_failed_mini_batches``), for user/error.txt."""
    return list(driver.poison_items)


def _remove_active_marker(path: os.PathLike[str]) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
