from __future__ import annotations

import pytest

from prsd.agent.share import share_slots


def test_one_job_gets_what_it_wants_up_to_the_slots() -> None:
    assert share_slots(8, [("a", 4)]) == {"a": 4}
    assert share_slots(2, [("a", 4)]) == {"a": 2}


def test_two_jobs_split_evenly() -> None:
    assert share_slots(8, [("a", 8), ("b", 8)]) == {"a": 4, "b": 4}


def test_unwanted_share_goes_to_the_others() -> None:
    assert share_slots(8, [("a", 1), ("b", 8), ("c", 8)]) == {"a": 1, "b": 4, "c": 3}


def test_odd_slot_goes_to_the_earlier_job() -> None:
    assert share_slots(3, [("a", 4), ("b", 4)]) == {"a": 2, "b": 1}


def test_more_jobs_than_slots() -> None:
    assert share_slots(2, [("a", 2), ("b", 2), ("c", 2)]) == {"a": 1, "b": 1, "c": 0}


@pytest.mark.parametrize("slots", range(12))
def test_never_more_than_slots_or_wanted(slots: int) -> None:
    demands = [("a", 3), ("b", 0), ("c", 7), ("d", 2)]
    alloc = share_slots(slots, demands)
    assert sum(alloc.values()) == min(slots, 12)
    assert all(alloc[j] <= d for j, d in demands)
