"""Take-over helpers: ordering committed attempts, merging the leaders' job reports."""

from __future__ import annotations

import csv
from pathlib import Path

from prsd.leader.resume import DONE, Found, done_order, merge_reports
from prsd.storage.layout import TaskName

HEADER = ["mini_batch_id", "attempt", "status", "node_id"]


def found(first: int, attempt: int, epoch: int, node: str) -> Found:
    return Found(TaskName(first, attempt, epoch), DONE, Path("/x"), node)


def test_attempts_are_ingested_oldest_first_newest_epoch_first() -> None:
    items = [found(5, 2, 1, "a"), found(9, 1, 1, "a"), found(5, 1, 1, "b"), found(5, 1, 3, "c")]
    ordered = sorted(items, key=done_order)
    assert [(f.task.first_mb, f.task.attempt, f.task.epoch) for f in ordered] == [
        (5, 1, 3),
        (5, 1, 1),
        (9, 1, 1),
        (5, 2, 1),
    ]


def write(path: Path, rows: list[list[str]], torn: str = "") -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([HEADER, *rows])
        f.write(torn)


def test_merge_keeps_the_first_row_per_attempt_and_drops_torn_rows(tmp_path: Path) -> None:
    main, part = tmp_path / "main.csv", tmp_path / "part.csv"
    write(
        main,
        [["000000001", "1", "failed", "a"], ["000000002", "1", "succeeded", "a"]],
        torn="0000000",
    )
    write(part, [["000000002", "1", "succeeded", "b"], ["000000001", "2", "succeeded", "b"]])
    dropped = merge_reports([main, part])
    assert dropped == 2
    assert not part.exists()
    with main.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows == [
        HEADER,
        ["000000001", "1", "failed", "a"],
        ["000000002", "1", "succeeded", "a"],
        ["000000001", "2", "succeeded", "b"],
    ]


def test_merge_of_a_clean_single_report_changes_nothing(tmp_path: Path) -> None:
    main = tmp_path / "main.csv"
    write(main, [["000000001", "1", "succeeded", "a"]])
    before = main.read_bytes()
    assert merge_reports([main]) == 0
    assert main.read_bytes() == before


def test_an_issued_name_is_settled_when_seen_or_superseded() -> None:
    from prsd.leader.issued import unsettled

    issued = {
        TaskName(0, 1, 1),  # seen in a listing
        TaskName(4, 1, 1),  # renamed to epoch 2 (superseded)
        TaskName(4, 1, 2),  # ... and that name is not seen yet
        TaskName(8, 1, 1),  # requeued as attempt 2 (superseded)
        TaskName(8, 2, 1),  # seen
    }
    seen = {TaskName(0, 1, 1).name, TaskName(8, 2, 1).name}
    assert unsettled(issued, seen) == [TaskName(4, 1, 2)]
    assert unsettled(issued, seen | {TaskName(4, 1, 2).name}) == []
