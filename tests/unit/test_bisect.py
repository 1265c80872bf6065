"""The poison-input search over a failed file list (pure state, no files)."""

from __future__ import annotations

import pytest

from prsd.leader.run.bisect import Search, halves

ITEMS = [f"/d/{i}" for i in range(8)]


def _run(search: Search, fails: object, limit: int = 100) -> int:
    """Drive a search: a group fails when ``fails(group)`` is true; returns probes run."""
    assert callable(fails)
    probes = 0
    while not search.done:
        batch = search.take()
        assert batch, "an unfinished search must have something to run"
        for group in batch:
            probes += 1
            search.record(group, "boom" if fails(group) else None)
        assert probes <= limit
    return probes


def test_halves() -> None:
    """Halves split evenly, the first not smaller."""
    assert halves(("a", "b", "c")) == (("a", "b"), ("c",))
    assert halves(("a", "b")) == (("a",), ("b",))


def test_one_bad_input_is_isolated_in_log_steps() -> None:
    """One poison file among 8: found alone with 2 x log2(8) = 6 probes."""
    search = Search.start(3, ITEMS, "ValueError: x")
    probes = _run(search, lambda g: "/d/5" in g)
    assert search.isolated == [(("/d/5",), "boom")]
    assert probes == 6


def test_two_bad_inputs_are_both_isolated() -> None:
    """Two poison files in different halves: both found, each alone."""
    search = Search.start(0, ITEMS, "e")
    _run(search, lambda g: "/d/1" in g or "/d/6" in g)
    assert sorted(search.isolated) == [(("/d/1",), "boom"), (("/d/6",), "boom")]


def test_inputs_that_fail_only_together_are_reported_as_a_group() -> None:
    """A failure that needs /d/2 and /d/5 together is reported as the smallest failing group."""
    search = Search.start(0, ITEMS, "OOM together")
    _run(search, lambda g: "/d/2" in g and "/d/5" in g)
    assert search.isolated == [(tuple(ITEMS), "OOM together")]


def test_not_repeatable_failure_ends_at_once() -> None:
    """Both halves succeed: the whole mini-batch is reported, after two probes."""
    search = Search.start(0, ITEMS, "flaky")
    assert _run(search, lambda g: False) == 2
    assert search.isolated == [(tuple(ITEMS), "flaky")]


def test_give_up_reports_open_groups() -> None:
    """A lost probe ends the search; the open groups are reported as inconclusive."""
    search = Search.start(0, ITEMS, "e")
    search.take()
    search.give_up("probe lost")
    assert search.done
    assert search.isolated == [(tuple(ITEMS), "e (search stopped: probe lost)")]


@pytest.mark.parametrize("bad", range(8))
def test_every_position_is_found(bad: int) -> None:
    """Whichever file is bad, it is the one isolated."""
    search = Search.start(0, ITEMS, "e")
    _run(search, lambda g: f"/d/{bad}" in g)
    assert [items for items, _ in search.isolated] == [(f"/d/{bad}",)]
