"""A failed job keeps the output of the mini-batches that succeeded (as Azure's does).

Invariant: when a job ends Failed, the append_row file is still published, holding
exactly the rows of the mini-batches that succeeded, in mini-batch order, each once;
mini-batches that failed or never finished add nothing. It is published by the same
write-aside-and-rename as a complete output, so it too appears whole or not at all;
``job_result.txt`` names it as the output of the succeeded mini-batches. A job that
is canceled, or in which nothing succeeded, publishes nothing.

Errors: OSError from the merge's writes propagates (the leader's job boundary waits
out a storage fault and resumes the job, which then ends again).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from prsd.errors import PrsdError
from prsd.leader.run.merge import Piece
from prsd.spool.faults import storage_fault
from prsd.spool.states import JobState

if TYPE_CHECKING:
    from collections.abc import Callable

    from prsd.leader.run.joblogs import JobLogs
    from prsd.leader.run.ledger import Ledger
    from prsd.leader.run.merge import OrderedMerge


def keep_partial_output(merge: OrderedMerge, ledger: Ledger, logs: JobLogs, state: str) -> str:
    """Publish the succeeded mini-batches' rows of a job that ends ``state``; the path.

    A succeeded mini-batch whose result can no longer be read (replaced or gone: the
    job may have failed for that very reason) is left out and named in the job log;
    every other succeeded row is published.
    """
    if state != JobState.FAILED or ledger.counts().succeeded_mbs == 0:
        merge.abandon()
        return ""
    for i in range(merge.next_index, len(ledger)):
        if not ledger.is_final(i):
            _keep_going(merge, partial(merge.offer, i, Piece(None)), logs)
    _keep_going(merge, merge.drain, logs)
    if merge.waiting or merge.broken:
        merge.abandon()  # a final mini-batch beyond the planned ones: nothing trustworthy
        return ""
    path = merge.finish()
    if merge.left_out:
        ids = ", ".join(f"{i:09d}" for i in merge.left_out)
        logs.master(f"the rows of mini-batches {ids} could not be read and are not in {path}")
    logs.master(f"the rows of the mini-batches that succeeded are in {path}")
    return str(path)


def _keep_going(merge: OrderedMerge, step: Callable[[], None], logs: JobLogs) -> None:
    """Run ``step``; a piece that cannot be appended is left out (logged), and the
    merge goes on with the next, until nothing it can append is left."""
    while True:
        try:
            step()
            return
        except (OSError, PrsdError) as exc:
            if storage_fault(exc) is not None:
                raise  # waited out at the job's boundary; the merge is rebuilt then
            logs.master(f"partial output: {exc}")
            step = merge.drain
