"""Job thresholds and retry decisions: pure functions, no I/O."""

from __future__ import annotations

import pytest

from prsd.leader.run.nextstep import next_step
from prsd.leader.run.verdict import Counts, Thresholds, Verdict, verdict
from prsd.wire.records import CRASHED, FAILED, REQUEUED, SUCCEEDED, TIMEOUT


@pytest.mark.parametrize(
    ("counts", "th", "done", "failed", "reason_part"),
    [
        (Counts(None), Thresholds(), False, False, ""),
        (Counts(4, succeeded_mbs=3), Thresholds(), False, False, ""),
        (Counts(4, succeeded_mbs=4, succeeded_items=40, items=40), Thresholds(), True, False, ""),
        (
            Counts(10, succeeded_mbs=4, failed_mbs=3),
            Thresholds(mini_batch_error_threshold=2),
            True,
            True,
            "mini_batch_error_threshold=2",
        ),
        (
            Counts(None, failed_mbs=3),
            Thresholds(mini_batch_error_threshold=2),
            True,
            True,
            "3 mini-batches failed",
        ),
        (Counts(10, failed_mbs=2), Thresholds(mini_batch_error_threshold=2), False, False, ""),
        (Counts(10, succeeded_mbs=8, failed_mbs=2), Thresholds(), True, False, ""),
        (
            Counts(10, succeeded_mbs=9, partial_mbs=1, failed_items=3),
            Thresholds(item_error_threshold=2),
            True,
            True,
            "item_error_threshold=2",
        ),
        (
            Counts(10, succeeded_mbs=10, partial_mbs=1, failed_items=3, succeeded_items=97),
            Thresholds(mini_batch_error_threshold=0),
            True,
            False,
            "",
        ),
        (
            Counts(10, succeeded_mbs=10, partial_mbs=1, failed_items=1, succeeded_items=99),
            Thresholds(mini_batch_error_threshold=0, item_error_threshold=5),
            True,
            True,
            "mini_batch_error_threshold=0",
        ),
        (
            Counts(10, succeeded_mbs=7, failed_mbs=3),
            Thresholds(allowed_failed_percent=20),
            True,
            True,
            "allowed_failed_percent=20",
        ),
        (
            Counts(None, succeeded_mbs=0, failed_mbs=3),
            Thresholds(allowed_failed_percent=20),
            False,
            False,
            "",
        ),
        (
            Counts(3, succeeded_mbs=3, items=30, succeeded_items=0),
            Thresholds(append_row=True),
            True,
            True,
            "no succeeded mini batch item",
        ),
        (
            Counts(3, succeeded_mbs=3, items=30, succeeded_items=0),
            Thresholds(append_row=False),
            True,
            False,
            "",
        ),
    ],
)
def test_verdict(
    counts: Counts, th: Thresholds, done: bool, failed: bool, reason_part: str
) -> None:
    """Each threshold fails the job exactly when Azure's rule says so."""
    v = verdict(counts, th)
    assert (v.done, v.failed) == (done, failed)
    assert reason_part in v.reason


@pytest.mark.parametrize(
    ("status", "failures", "max_retries", "final", "succeeded", "retry", "after"),
    [
        (SUCCEEDED, 0, 2, True, True, False, 0),
        (FAILED, 0, 2, False, False, True, 1),
        (TIMEOUT, 1, 2, False, False, True, 2),
        (CRASHED, 2, 2, True, False, False, 3),
        (FAILED, 0, 0, True, False, False, 1),
        (REQUEUED, 2, 2, False, False, True, 2),
    ],
)
def test_next_step(
    status: str,
    failures: int,
    max_retries: int,
    final: bool,
    succeeded: bool,
    retry: bool,
    after: int,
) -> None:
    """Failures use up retries; requeues (node lost, handed back) never do."""
    step = next_step(status, failures, max_retries)
    assert (step.final, step.succeeded, step.retry, step.failures) == (
        final,
        succeeded,
        retry,
        after,
    )


def test_a_command_step_fails_in_its_own_terms() -> None:
    """A pipeline's command step is one mini-batch: its failure is the command's."""
    failed = verdict(Counts(total_mbs=1, failed_mbs=1), Thresholds(0, command=True))
    assert failed == Verdict(True, True, "the command failed on its last attempt")
