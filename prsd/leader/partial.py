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

from typing import TYPE_CHECKING

from prsd.leader.merge import Piece

if TYPE_CHECKING:
    from prsd.leader.joblogs import JobLogs
    from prsd.leader.ledger import Ledger
    from prsd.leader.merge import OrderedMerge


def keep_partial_output(merge: OrderedMerge, ledger: Ledger, logs: JobLogs, state: str) -> str:
    """Publish the succeeded mini-batches' rows of a job that ends ``state``; the path."""
    if state != "Failed" or ledger.counts().succeeded_mbs == 0:
        merge.abandon()
        return ""
    for i in range(merge.next_index, len(ledger)):
        if not ledger.is_final(i):
            merge.offer(i, Piece(None))  # unfinished: adds nothing, lets later ones through
    if merge.waiting:
        merge.abandon()  # a final mini-batch beyond the planned ones: nothing trustworthy
        return ""
    path = merge.finish()
    logs.master(f"the rows of the mini-batches that succeeded are in {path}")
    return str(path)
