"""Sharing a node's worker slots fairly between the jobs it serves (pure).

Water-filling: every job gets up to an equal share of the slots; what a job does not
want (its ``max_concurrency_per_instance`` is lower) goes to the others, again in equal
shares. Leftover single slots go to the jobs taken on first (by the order given), so a
new job does not take a worker from one already running when the split is uneven.
"""

from __future__ import annotations


def share_slots(slots: int, demands: list[tuple[str, int]]) -> dict[str, int]:
    """Slots per job: ``demands`` is (job id, workers wanted) in the order jobs arrived.

    Every job that wants a worker gets at least one when there are enough slots for
    all; the sum never exceeds ``slots`` (except that with more jobs than slots the
    first ``slots`` jobs get one each and the rest none until one ends).
    """
    alloc = {job: 0 for job, _ in demands}
    want = {job: max(d, 0) for job, d in demands}
    order = [job for job, _ in demands]
    left = max(slots, 0)
    while left > 0:
        hungry = [j for j in order if alloc[j] < want[j]]
        if not hungry:
            break
        each = left // len(hungry)
        if each == 0:
            for j in hungry[:left]:
                alloc[j] += 1
            break
        for j in hungry:
            give = min(each, want[j] - alloc[j])
            alloc[j] += give
            left -= give
    return alloc
