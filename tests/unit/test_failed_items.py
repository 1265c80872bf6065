"""Failures that cannot hide: the completed state and the failed-items book (pure)."""

from __future__ import annotations

import pytest

from prsd.leader.end.faileditems import FailedItemsBook, describe_items
from prsd.leader.run.verdict import (
    COMPLETED,
    COMPLETED_WITH_FAILURES,
    Counts,
    completed_state,
    failures_reason,
)


@pytest.mark.parametrize(
    ("counts", "short_counts", "state"),
    [
        (Counts(4, succeeded_mbs=4, items=8, succeeded_items=8), True, COMPLETED),
        (
            Counts(4, succeeded_mbs=3, failed_mbs=1, items=8, failed_items=2),
            True,
            COMPLETED_WITH_FAILURES,
        ),
        (
            Counts(4, succeeded_mbs=3, failed_mbs=1, items=8, failed_items=2),
            False,
            COMPLETED_WITH_FAILURES,
        ),
        (
            Counts(2, succeeded_mbs=2, partial_mbs=1, items=4, failed_items=1),
            True,
            COMPLETED_WITH_FAILURES,
        ),
        (Counts(2, succeeded_mbs=2, partial_mbs=2, items=4, failed_items=4), False, COMPLETED),
    ],
)
def test_completed_state(counts: Counts, short_counts: bool, state: str) -> None:
    """Failed mini-batches always show; short results only where the gap counts."""
    assert completed_state(counts, short_is_failure=short_counts) == state


def test_failures_reason_names_counts_and_file() -> None:
    """One line: how many failed, how many items lack output, where the list is."""
    line = failures_reason(Counts(12, 9, 3, 1, 36, 26, 10), "/j/logs/sys/failed_items.txt")
    assert line.startswith("3 of 12 mini-batches failed; 1 returned fewer elements")
    assert "(10 items without output)" in line and line.endswith("/j/logs/sys/failed_items.txt")
    assert "\n" not in line


@pytest.mark.parametrize(
    ("payload", "key", "expected"),
    [
        (["/d/a.png", "/d/b.png"], None, ["/d/a.png", "/d/b.png"]),
        (
            {"path": "/t/a.csv", "start": 10, "end": 90, "line": 3},
            None,
            ["/t/a.csv from line 3 bytes 10-90"],
        ),
        ({"path": "/t/a.parquet", "row_groups": [3, 4]}, None, ["/t/a.parquet row groups 3,4"]),
        ({"path": "/spool/x.arrow", "rows": 5}, {"store": "s1"}, ["partition store='s1'"]),
    ],
)
def test_items_are_named_as_planned(
    payload: object, key: dict[str, str] | None, expected: list[str]
) -> None:
    """Files by path, ranges by file and bytes, groups by key values."""
    assert describe_items(payload, key) == expected


def test_book_renders_every_input_then_bisection() -> None:
    """One tab-separated line per input, later records replace, tabs escaped."""
    book = FailedItemsBook()
    book.add(7, ["/d/a", "/d/b\tc"], None, "failed", "ValueError: x\n  more")
    book.add(2, ["/d/z"], None, "timeout", "")
    book.add(7, ["/d/a", "/d/b\tc"], None, "crashed", "died")
    lines = book.render(["/d/a (mini-batch 000000007): died"]).splitlines()
    body = [ln for ln in lines if not ln.startswith("#")]
    assert body == [
        "/d/z\t000000002\ttimeout\t-",
        "/d/a\t000000007\tcrashed\tdied",
        "/d/b\\tc\t000000007\tcrashed\tdied",
    ]
    assert lines[-1] == "# /d/a (mini-batch 000000007): died"
    assert book.failed_count == 3
