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

from prsd.errors import ExitCode, PrsdError
from prsd.leader.bisect import short_is_failure
from prsd.leader.errortext import init_groups, job_error_text
from prsd.leader.faileditems import write_failed_items
from prsd.leader.faultfile import job_log, written_fault
from prsd.leader.joblogs import format_duration
from prsd.leader.partial import keep_partial_output
from prsd.leader.rerun import combine_outputs, job_code_digest, read_retry_plan, retry_summary
from prsd.leader.verdict import COMPLETED_WITH_FAILURES, completed_state, failures_reason
from prsd.logline import one_line
from prsd.storage.atomic import write_atomic

if TYPE_CHECKING:
    from prsd.leader.job import JobDriver

EXIT_CODES = {
    "Completed": ExitCode.OK,
    COMPLETED_WITH_FAILURES: ExitCode.OK,  # as Azure: within the thresholds is success
    "Failed": ExitCode.JOB_FAILED,
    "Canceled": ExitCode.JOB_CANCELED,
}


@dataclass(frozen=True)
class FinalState:
    """How a job ended (``state/final.json``)."""

    state: str  # Completed | Completed with failures | Failed | Canceled
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
    listed = write_failed_items(layout.logs, driver.bisect.failed_items, poison_items(driver))
    if state == "Completed":
        counts = driver.ledger.counts()
        state = completed_state(counts, short_is_failure=short_is_failure(driver.spec))
        if state == COMPLETED_WITH_FAILURES:
            reason = failures_reason(counts, str(listed))
    output = ""
    if driver.merge is not None:
        if state in ("Completed", COMPLETED_WITH_FAILURES):
            try:
                output = publish_output(driver)
            except (OSError, PrsdError) as exc:
                state, reason = "Failed", f"the output could not be assembled: {exc}"
        else:
            if read_retry_plan(layout.root) is None:
                output = keep_partial_output(driver, state)
            else:
                driver.merge.abandon()  # a retry's output is whole or nothing
    note = retry_summary(layout)
    if note:
        driver.logs.master(f"retry: {note}")
    root = ""
    if state == "Failed":
        root = driver.errors.root_cause() or driver.init_detail
    elif state == COMPLETED_WITH_FAILURES:
        root = driver.errors.root_cause()
    text = result_text(driver, state, reason, output, root, now, note=note or "")
    summary = job_error_text(
        state,
        reason,
        driver.errors,
        inits=init_groups(driver.node_inits),
        poison_items=poison_items(driver),
        job_log=str(job_log(layout.logs)),
        fault_file=written_fault(layout.logs),
    )
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
    driver: JobDriver,
    state: str,
    reason: str,
    output: str,
    root_cause: str,
    now: float,
    *,
    note: str = "",
) -> str:
    """The content of logs/job_result.txt: state, the reason, then where to look."""
    c = driver.ledger.counts()
    total: int | str = (
        c.total_mbs if c.total_mbs is not None else f"{len(driver.ledger)} planned so far"
    )
    lines = [state]
    if state in ("Failed", COMPLETED_WITH_FAILURES):
        lines.append(f"Reason: {one_line(reason)}")
        if root_cause:
            lines.append(one_line(root_cause))  # the job's own error text: one line
    elif reason:
        lines.append(one_line(reason))
    lines.append(
        f"Processed {c.finished_mbs} of {total} mini-batches in "
        f"{format_duration(now - driver.started)}: {c.succeeded_mbs} succeeded, "
        f"{c.failed_mbs} failed; {c.succeeded_items} of {c.items} items succeeded."
    )
    if output:
        lines.append(f"Output: {output}")
    if note:
        lines.append(f"Retry: {note}")
    code = job_code_digest(driver.layout)
    if code:
        lines.append(f"Code snapshot: {code} (digest of the job's code folder)")
    lines.append(f"Logs: {driver.layout.logs} (see readme.txt there for the layout)")
    return "\n".join(lines) + "\n"


def publish_output(driver: JobDriver) -> str:
    """Publish the append_row file; a retry's is rebuilt whole with the kept results."""
    merge = driver.merge
    assert merge is not None
    if read_retry_plan(driver.layout.root) is None:
        return str(merge.finish())
    merge.abandon()
    spec = driver.spec
    return str(
        combine_outputs(
            driver.layout,
            merge.out_path,
            write_header=spec.append_row_dataframe_header,
            fmt=spec.append_row_format,
        )
    )


def poison_items(driver: JobDriver) -> list[object]:
    """The inputs bisection isolated (``bisect_failed_mini_batches``), for user/error.txt."""
    return list(driver.poison_items)


def _remove_active_marker(path: os.PathLike[str]) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
