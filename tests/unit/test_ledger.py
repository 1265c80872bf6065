"""The leader's per-mini-batch book: attempts, finals and counts."""

from __future__ import annotations

import pytest

from prsd.leader.run.ledger import Ledger
from prsd.wire.records import FAILED, SUCCEEDED, Outcome


def test_counts_follow_outcomes() -> None:
    """Succeeded, partial and failed mini-batches add up to the job's counts."""
    book = Ledger(max_retries=1)
    for i in range(3):
        book.plan(i, items=10)
    book.total_mbs = 3
    book.record(Outcome(0, SUCCEEDED, items=10, succeeded_items=10))
    book.record(Outcome(1, SUCCEEDED, items=10, succeeded_items=7, failed_items=3))
    step = book.record(Outcome(2, FAILED, items=10, error="boom"))
    assert step.retry and book.attempt(2) == 2
    assert not book.all_final()
    step = book.record(Outcome(2, FAILED, items=10, error="boom"))
    assert step.final and not step.succeeded
    c = book.counts()
    assert (c.succeeded_mbs, c.failed_mbs, c.partial_mbs) == (2, 1, 1)
    assert (c.items, c.succeeded_items, c.failed_items) == (30, 17, 13)
    assert book.all_final()
    assert book.attempts == 4


def test_requeue_raises_attempt_but_not_failures() -> None:
    """A requeue is a new attempt that does not use up a retry."""
    book = Ledger(max_retries=0)
    book.plan(0, items=1)
    book.requeue(0)
    book.requeue(0)
    assert book.attempt(0) == 3
    assert book.failures(0) == 0
    assert book.requeues == 2
    assert book.record(Outcome(0, SUCCEEDED, items=1, succeeded_items=1)).final


def test_more_returned_than_given_is_capped() -> None:
    """succeeded_items never exceeds the input count."""
    book = Ledger(max_retries=0)
    book.plan(0, items=2)
    book.total_mbs = 1
    book.record(Outcome(0, SUCCEEDED, items=2, succeeded_items=5))
    assert book.counts().succeeded_items == 2


def test_plan_out_of_order_is_refused() -> None:
    """Mini-batches are planned strictly in input order."""
    book = Ledger(max_retries=0)
    with pytest.raises(ValueError, match="out of order"):
        book.plan(1, items=1)


def test_final_twice_is_refused() -> None:
    """A mini-batch cannot be finished twice."""
    book = Ledger(max_retries=0)
    book.plan(0, items=1)
    book.record(Outcome(0, SUCCEEDED, items=1, succeeded_items=1))
    with pytest.raises(ValueError, match="already final"):
        book.record(Outcome(0, SUCCEEDED, items=1, succeeded_items=1))


def _outcomes() -> list[Outcome]:
    return [
        Outcome(0, SUCCEEDED, items=3, succeeded_items=3),
        Outcome(1, SUCCEEDED, items=0, succeeded_items=0),  # items from the plan
        Outcome(2, SUCCEEDED, items=4, succeeded_items=2),  # short
        Outcome(3, SUCCEEDED, items=2, succeeded_items=5),  # more than given: capped
    ]


def test_a_run_of_successes_counts_as_each_one_would() -> None:
    one, run = Ledger(3), Ledger(3)
    for ledger in (one, run):
        for i, n in enumerate([3, 2, 4, 2, 1]):
            ledger.plan(i, n)
    for o in _outcomes():
        one.record(o)
    run.record_succeeded(_outcomes())
    assert run.counts() == one.counts()
    assert (run.attempts, run.requeues) == (one.attempts, one.requeues) == (4, 0)
    assert [run.succeeded(i) for i in range(5)] == [True, True, True, True, False]
    assert run.planned_items() == one.planned_items()


def test_a_run_with_a_final_or_failed_mini_batch_is_refused_whole() -> None:
    ledger = Ledger(3)
    for i in range(3):
        ledger.plan(i, 1)
    ledger.record(Outcome(1, SUCCEEDED, items=1, succeeded_items=1))
    before = ledger.counts()
    with pytest.raises(ValueError, match="mini-batch 1"):
        ledger.record_succeeded([Outcome(0, SUCCEEDED), Outcome(1, SUCCEEDED)])
    with pytest.raises(ValueError, match="mini-batch 2"):
        ledger.record_succeeded([Outcome(0, SUCCEEDED), Outcome(2, FAILED)])
    assert ledger.counts() == before and not ledger.is_final(0)
