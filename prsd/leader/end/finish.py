"""Ending a job: the output, the result files, and the markers agents watch.

Order matters: the append_row file is published (renamed into place) first; then
the texts (``job_error.txt``, ``user/error.txt``, ``job_result.txt``), the last
status and the final record are written by the one end-of-job writer
(:meth:`prsd.spool.jobfolder.JobFolder.end`: the final state last), which removes
``active/<job>`` after them, so anyone who sees the job ended also sees its output
and every file that says why.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prsd.errors import PrsdError
from prsd.jobspec.model import short_is_failure
from prsd.leader.end.errortext import compact_error, init_groups, job_error_text
from prsd.leader.end.faileditems import write_failed_items
from prsd.leader.end.faultfile import job_log, written_fault
from prsd.leader.end.partial import keep_partial_output
from prsd.leader.end.privatestatus import GRANT
from prsd.leader.rerun.retryjob import job_code_digest, read_retry_plan, retry_summary
from prsd.leader.run.status import final_counts
from prsd.leader.run.verdict import completed_state, failures_reason
from prsd.logline import one_line
from prsd.spool.durations import format_duration
from prsd.spool.endrecords import final_record
from prsd.spool.finalrecord import FinalState
from prsd.spool.jobfolder import JobFolder
from prsd.spool.states import EXIT_CODES, JobState
from prsd.spool.statusrecord import JobStatus

if TYPE_CHECKING:
    from prsd.jobspec import JobSpec
    from prsd.leader.end.faileditems import FailedItemsBook
    from prsd.leader.run.errorbook import ErrorBook
    from prsd.leader.run.initrule import NodeInit
    from prsd.leader.run.joblogs import JobLogs
    from prsd.leader.run.ledger import Ledger
    from prsd.leader.run.merge import OrderedMerge
    from prsd.leader.run.snapshot import JobSnapshot
    from prsd.leader.run.status import StatusWriter
    from prsd.spool.layout import JobLayout

__all__ = ["EXIT_CODES", "FinalState", "JobEnd", "finish_job", "result_text"]


@dataclass(frozen=True)
class JobEnd:
    """What ending a job writes to and with: the job's files, output and logs."""

    layout: JobLayout
    spec: JobSpec
    merge: OrderedMerge | None
    logs: JobLogs
    ledger: Ledger  # which mini-batches are final (a failed job's partial output)
    failed_items: FailedItemsBook  # items bisection found failing (failed_items.csv)
    poison_items: list[object]  # the inputs bisection isolated, for user/error.txt
    errors: ErrorBook  # the run() errors, grouped (job_error.txt)
    node_inits: list[NodeInit]  # the nodes' init() failures and environment builds


def finish_job(
    end: JobEnd,
    snap: JobSnapshot,
    state: str,
    reason: str,
    status: StatusWriter,
    now: float,
) -> FinalState:
    """Publish or drop the output and write every end-of-job file, the job's last
    status document (from ``status``, unless fenced off) before its final record."""
    layout = end.layout
    listed = write_failed_items(layout.logs, end.failed_items, end.poison_items)
    if state == JobState.COMPLETED:
        counts = snap.counts
        state = completed_state(counts, short_is_failure=short_is_failure(end.spec))
        if state == JobState.COMPLETED_WITH_FAILURES:
            reason = failures_reason(counts, str(listed))
    output = ""
    if end.merge is not None:
        if state in (JobState.COMPLETED, JobState.COMPLETED_WITH_FAILURES):
            try:
                output = publish_output(end)
            except (OSError, PrsdError) as exc:
                state, reason = JobState.FAILED, f"the output could not be assembled: {exc}"
        else:
            if read_retry_plan(layout.root) is None:
                output = keep_partial_output(end.merge, end.ledger, end.logs, state)
            else:
                end.merge.abandon()  # a retry's output is whole or nothing
    note = retry_summary(layout)
    if note:
        end.logs.master(f"retry: {note}")
    root = ""
    if state == JobState.FAILED:
        root = snap.first_error or snap.init_detail
    elif state == JobState.COMPLETED_WITH_FAILURES:
        root = snap.first_error
    text = result_text(snap, layout, state, reason, output, root, note=note or "")
    summary = job_error_text(
        state,
        reason,
        end.errors,
        inits=init_groups(end.node_inits),
        poison_items=end.poison_items,
        job_log=str(job_log(layout.logs)),
        fault_file=written_fault(layout.logs),
    )
    final = final_record(
        JobState(state), reason, output=output, root_cause=root, counts=final_counts(snap)
    )
    end.logs.progress(f"{snap.progress_line} The job is {state.lower()}. {reason}".strip())
    end.logs.master(f"job {state}: {reason or 'all mini-batches processed'}")
    tree = layout.log_tree
    texts = [
        (tree.job_error, summary.encode()),
        (tree.user_error, summary.encode()),
        (tree.job_result, text.encode()),
    ]
    last = status.next_document(dataclasses.replace(snap, final=final), now)
    JobFolder.of(layout, grant=GRANT).end(final, JobStatus.of(last) if last else None, texts)
    return final


def result_text(
    snap: JobSnapshot,
    layout: JobLayout,
    state: str,
    reason: str,
    output: str,
    root_cause: str,
    *,
    note: str = "",
) -> str:
    """The content of logs/job_result.txt: state, the reason, then where to look."""
    c = snap.counts
    total: int | str = (
        c.total_mbs if c.total_mbs is not None else f"{snap.planned_mbs} planned so far"
    )
    lines = [str(state)]
    if state in (JobState.FAILED, JobState.COMPLETED_WITH_FAILURES):
        lines.append(f"Reason: {one_line(reason)}")
        if root_cause:
            lines.append(one_line(compact_error(root_cause)))  # the job's own text: one line
    elif reason:
        lines.append(one_line(reason))
    lines.append(
        f"Processed {c.finished_mbs} of {total} mini-batches in "
        f"{format_duration(snap.elapsed_s)}: {c.succeeded_mbs} succeeded, "
        f"{c.failed_mbs} failed; {c.succeeded_items} of {c.items} items succeeded."
    )
    if output:
        lines.append(f"Output: {output}")
    if note:
        lines.append(f"Retry: {note}")
    code = job_code_digest(layout)
    if code:
        lines.append(f"Code snapshot: {code} (digest of the job's code folder)")
    lines.append(f"Logs: {layout.logs} (see readme.txt there for the layout)")
    return "\n".join(lines) + "\n"


def publish_output(end: JobEnd) -> str:
    """Publish the append_row file; a retry's is rebuilt whole with the kept results."""
    merge = end.merge
    assert merge is not None
    if read_retry_plan(end.layout.root) is None:
        return str(merge.finish())
    from prsd.leader.rerun.combine import combine_outputs  # a retry's only

    merge.abandon()
    spec = end.spec
    return str(
        combine_outputs(
            end.layout,
            merge.out_path,
            write_header=spec.append_row_dataframe_header,
            fmt=spec.append_row_format,
            place=merge.place,
            side=merge.side,
        )
    )
