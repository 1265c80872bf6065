"""Grouping identical errors: counts, first place, root cause, poison items."""

from __future__ import annotations

from prsd.leader.run.errorbook import RECENT_ERRORS, ErrorBook
from prsd.wire.records import Outcome


def _fail(index: int, error: str, process: str = "process000", status: str = "failed") -> Outcome:
    return Outcome(
        index=index,
        status=status,
        process_name=process,
        error=error,
        traceback_tail="Traceback\n  ValueError: x",
        error_file=f"/logs/user/error/n1/{process}.txt",
    )


def test_identical_errors_are_counted_once_with_their_first_place() -> None:
    """Three of one error and one of another: two lines, most frequent first."""
    book = ErrorBook()
    book.add(_fail(4, "ValueError: x", "process001"), 1, "n1")
    book.add(_fail(2, "KeyError: 'k'"), 1, "n2")
    book.add(_fail(4, "ValueError: x"), 2, "n1")
    book.add(_fail(9, "ValueError: x"), 1, "n2")
    book.add(Outcome(index=5, status="succeeded"), 1, "n1")
    lines = book.summary().splitlines()
    first = (
        "3 x [failed] ValueError: x (first: mini-batch 000000004 (attempt 1) on node n1, "
        "process001; see /logs/user/error/n1/process001.txt)"
    )
    second = (
        "1 x [failed] KeyError: 'k' (first: mini-batch 000000002 (attempt 1) on node n2, "
        "process000; see /logs/user/error/n1/process000.txt)"
    )
    assert lines == [first, second]
    assert "Poison" not in book.summary()
    assert book.root_cause().startswith("First error: mini-batch 000000004 (attempt 1)")


def test_status_of_an_error_keeps_groups_apart() -> None:
    """A timeout and a failure with the same text are different errors."""
    book = ErrorBook()
    book.add(_fail(1, "stuck", status="timeout"), 1, "n1")
    book.add(_fail(2, "stuck", status="failed"), 1, "n1")
    assert len(book.groups) == 2


def test_poison_items_section_appears_only_when_there_are_some() -> None:
    """Items isolated by bisection are listed after the errors, one per line."""
    book = ErrorBook()
    book.add(_fail(3, "ValueError: x"), 1, "n1")
    assert "Poison items" not in book.summary([])
    text = book.summary(["/data/f7.png", "/data/f9.png"])
    assert text.splitlines()[-3:] == [
        "Poison items (2), isolated by bisection:",
        "  /data/f7.png",
        "  /data/f9.png",
    ]


def test_no_errors_and_recent_errors() -> None:
    """An empty book says so; the recent list keeps only the latest few, newest last."""
    book = ErrorBook()
    assert book.summary() == "No errors.\n"
    for i in range(RECENT_ERRORS + 3):
        book.add(_fail(i, f"E{i}"), 1, "n1")
    assert [p.mini_batch for p in book.recent] == list(range(3, RECENT_ERRORS + 3))
    assert book.recent[-1].brief()["mini_batch"] == f"{RECENT_ERRORS + 2:09d}"
