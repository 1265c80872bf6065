"""Which committed tasks are booked as one unit (prsd.leader.run.results.whole_task)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from prsd.leader.run.ledger import Ledger
from prsd.leader.run.results import whole_task
from prsd.wire.records import FAILED, SUCCEEDED, Outcome


def _ledger() -> Ledger:
    ledger = Ledger(3)
    for i in range(6):
        ledger.plan(i, 2)
    return ledger


def _task(first: int = 2, n: int = 3) -> dict[int, Outcome]:
    """Mini-batches first..first+n-1, 2 elements each, 5 bytes each, back to back."""
    return {
        i: Outcome(i, SUCCEEDED, items=2, succeeded_items=2, offset=5 * k, length=5)
        for k, i in enumerate(range(first, first + n))
    }


def test_a_task_that_succeeded_whole_is_one_run() -> None:
    run = whole_task([2, 3, 4], 1, _task(), _ledger())
    assert run is not None and [o.index for o in run] == [2, 3, 4]


def _changed(index: int, **what: object) -> dict[int, Outcome]:
    outcomes = _task()
    outcomes[index] = replace(outcomes[index], **what)  # type: ignore[arg-type]
    return outcomes


@pytest.mark.parametrize(
    "outcomes",
    [
        _changed(3, status=FAILED),
        _changed(3, error="run() said so"),
        _changed(4, succeeded_items=1),  # short: its items are noted as failed
        _changed(3, offset=6),  # a gap between the byte ranges
        {i: o for i, o in _task().items() if i != 3},  # not run
    ],
    ids=["failed", "error", "short", "gap", "unrun"],
)
def test_any_other_task_goes_mini_batch_by_mini_batch(outcomes: dict[int, Outcome]) -> None:
    assert whole_task([2, 3, 4], 1, outcomes, _ledger()) is None


def test_a_stale_or_final_attempt_is_not_one_run() -> None:
    ledger = _ledger()
    assert whole_task([2, 3, 4], 2, _task(), ledger) is None  # attempt 2 is not live
    ledger.requeue(3)
    assert whole_task([2, 3, 4], 1, _task(), ledger) is None  # 3 is at attempt 2 now
    ledger = _ledger()
    ledger.record(Outcome(2, SUCCEEDED, items=2, succeeded_items=2))
    assert whole_task([2, 3, 4], 1, _task(), ledger) is None  # 2 already final
    assert whole_task([4, 5, 6], 1, _task(4), _ledger()) is None  # 6 never planned
    assert whole_task([2, 4], 1, _task(), _ledger()) is None  # not consecutive
