"""Job thresholds: a pure verdict over the job's counters (docs/jobspec.md, "Thresholds").

Azure's rules, exactly:

- ``mini_batch_error_threshold``: more failed mini-batches than this fails the job
  (-1 ignores all). Checked as failures happen.
- ``item_error_threshold`` (v1 ``error_threshold``): more failed items than this
  fails the job (-1 ignores all). Checked as failures happen.
- ``allowed_failed_percent``: failed mini-batches above this share of all fails the
  job; "the check starts after all mini batches have been scheduled".
- A mini-batch counts as failed when its retries are exhausted, and also, when
  ``item_error_threshold`` is not -1, when ``run()`` returned fewer elements than
  it was given.
- append_row with not a single returned element fails the job (Azure's
  ``NoResultToAppendError``).

A pipeline's command step (one mini-batch: the command) that fails is said to have
failed in those terms ("the command failed on its last attempt").

A job that completes within its thresholds with failed mini-batches, or with items
missing from its append_row output, ends ``Completed with failures`` (exit code 0,
as Azure's would be): partial output never looks like success.
"""

from __future__ import annotations

from dataclasses import dataclass

from prsd.spool.states import JobState


@dataclass(frozen=True)
class Thresholds:
    mini_batch_error_threshold: int = -1
    item_error_threshold: int = -1
    allowed_failed_percent: float = 100.0
    append_row: bool = False
    command: bool = False  # a pipeline's command step: one mini-batch, the command


@dataclass(frozen=True)
class Counts:
    total_mbs: int | None  # None while the split is still running
    succeeded_mbs: int = 0  # final, run() returned (possibly fewer elements than inputs)
    failed_mbs: int = 0  # final, retries exhausted
    partial_mbs: int = 0  # succeeded with fewer elements than inputs
    items: int = 0  # items of final mini-batches
    succeeded_items: int = 0
    failed_items: int = 0  # items of failed mini-batches plus shortfalls

    @property
    def finished_mbs(self) -> int:
        return self.succeeded_mbs + self.failed_mbs


@dataclass(frozen=True)
class Verdict:
    done: bool
    failed: bool
    reason: str = ""


RUNNING = Verdict(False, False)


def counted_failed_mbs(counts: Counts, th: Thresholds) -> int:
    """Failed mini-batches as the thresholds count them."""
    if th.item_error_threshold == -1:
        return counts.failed_mbs
    return counts.failed_mbs + counts.partial_mbs


def verdict(counts: Counts, th: Thresholds) -> Verdict:
    """Decide whether the job goes on, completed, or failed (and why)."""
    failed_mbs = counted_failed_mbs(counts, th)
    limit = th.mini_batch_error_threshold
    if limit != -1 and failed_mbs > limit:
        if th.command:  # said in the step's terms, not in mini-batches
            return Verdict(True, True, "the command failed on its last attempt")
        return Verdict(
            True,
            True,
            f"{failed_mbs} mini-batches failed, more than mini_batch_error_threshold={limit}",
        )
    ilimit = th.item_error_threshold
    if ilimit != -1 and counts.failed_items > ilimit:
        return Verdict(
            True,
            True,
            f"{counts.failed_items} items failed, more than item_error_threshold={ilimit}",
        )
    if counts.total_mbs is None:
        return RUNNING
    if counts.total_mbs and failed_mbs * 100.0 > th.allowed_failed_percent * counts.total_mbs:
        pct = 100.0 * failed_mbs / counts.total_mbs
        return Verdict(
            True,
            True,
            f"{failed_mbs} of {counts.total_mbs} mini-batches failed ({pct:.1f}%), more than "
            f"allowed_failed_percent={th.allowed_failed_percent:g}",
        )
    if counts.finished_mbs < counts.total_mbs:
        return RUNNING
    if th.append_row and counts.succeeded_items == 0:
        return Verdict(
            True,
            True,
            "There is no succeeded mini batch item returned from run() (append_row needs at "
            "least one returned element)",
        )
    return Verdict(True, False)


COMPLETED = JobState.COMPLETED
COMPLETED_WITH_FAILURES = JobState.COMPLETED_WITH_FAILURES


def completed_state(counts: Counts, *, short_is_failure: bool) -> str:
    """``Completed``, or ``Completed with failures`` when something has no output row.

    Args:
        counts: the job's final counters.
        short_is_failure: a mini-batch returning fewer elements than inputs leaves a
            gap that counts (append_row, or ``item_error_threshold`` set).
    """
    if counts.failed_mbs > 0 or (short_is_failure and counts.failed_items > 0):
        return COMPLETED_WITH_FAILURES
    return COMPLETED


def failures_reason(counts: Counts, failed_items_file: str) -> str:
    """One line for a job completed with failures: the counts and where the list is."""
    total = counts.total_mbs if counts.total_mbs is not None else "?"
    parts = [f"{counts.failed_mbs} of {total} mini-batches failed"]
    if counts.partial_mbs:
        parts.append(f"{counts.partial_mbs} returned fewer elements than inputs")
    return (
        f"{'; '.join(parts)} ({counts.failed_items} items without output), within the "
        f"error thresholds. Failed items: {failed_items_file}"
    )
