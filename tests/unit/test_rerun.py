"""Retry plans: which mini-batches a retry job runs, and how they are numbered."""

from __future__ import annotations

import pytest

from prsd.errors import InputError
from prsd.leader.rerun import RetryPlan, len_so_far, select_mini_batches
from prsd.storage.records import MiniBatch


def _mbs(n: int) -> list[MiniBatch]:
    return [MiniBatch(i, [f"/d/{i}"], 1) for i in range(n)]


def test_only_planned_mini_batches_run_renumbered_from_zero() -> None:
    """Mini-batches 2, 5 and 9 of ten become 0, 1 and 2 with their own payloads."""
    plan = RetryPlan("old", 10, (2, 5, 9))
    got = list(select_mini_batches(plan, iter(_mbs(10))))
    assert [(m.index, m.payload) for m in got] == [(0, ["/d/2"]), (1, ["/d/5"]), (2, ["/d/9"])]


@pytest.mark.parametrize("n", [9, 11])
def test_a_changed_input_fails_the_retry(n: int) -> None:
    """An input that splits differently than before is refused."""
    plan = RetryPlan("old", 10, (2, 5))
    with pytest.raises(InputError, match="changed since"):
        list(select_mini_batches(plan, iter(_mbs(n))))


def test_plan_round_trip_and_index_lookup() -> None:
    """The plan survives its file; an earlier index maps to its place in the retry."""
    plan = RetryPlan("old", 10, (2, 5, 9))
    assert RetryPlan.decode(plan.encode()) == plan
    assert [len_so_far(plan, i) for i in (2, 5, 9, 0, 6)] == [0, 1, 2, 0, 2]
