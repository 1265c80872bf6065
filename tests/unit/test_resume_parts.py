"""Take-over helpers: ordering committed attempts, merging the leaders' job reports."""

from __future__ import annotations

import csv
from pathlib import Path

from prsd.leader.takeover.resume import DONE, Found, done_order, merge_reports
from prsd.spool.layout import TaskName

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


def test_a_single_report_torn_at_its_end_loses_its_torn_row(tmp_path: Path) -> None:
    """The leader that ends the job after one that was killed in mid-row, and wrote no
    row of its own: one report, its last row cut short."""
    main = tmp_path / "main.csv"
    write(main, [["000000001", "1", "succeeded", "a"]], torn="000000002,1,succ")
    assert merge_reports([main]) == 1
    with main.open(newline="", encoding="utf-8") as f:
        assert list(csv.reader(f)) == [HEADER, ["000000001", "1", "succeeded", "a"]]
    assert merge_reports([main]) == 0  # whole now


def test_a_missing_or_empty_single_report_is_left_alone(tmp_path: Path) -> None:
    assert merge_reports([tmp_path / "missing.csv"]) == 0
    assert not (tmp_path / "missing.csv").exists()
    (tmp_path / "empty.csv").write_bytes(b"")
    assert merge_reports([tmp_path / "empty.csv"]) == 0
    assert (tmp_path / "empty.csv").read_bytes() == b""


def test_an_issued_name_is_settled_when_seen_or_superseded() -> None:
    from prsd.leader.takeover.issued import unsettled

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


def test_a_row_torn_after_its_key_is_written_again_by_the_next_leader(tmp_path: Path) -> None:
    """A kill in mid-row can leave ``000000005,1,succ``: its key must not count as written."""
    from prsd.leader.run.joblogs import CSV_COLUMNS, AttemptRow, JobLogs
    from prsd.spool.layout import JobLayout
    from prsd.wire.records import Outcome

    layout = JobLayout(tmp_path / "job", "job")
    first = JobLogs(layout, epoch=1)
    whole = Outcome(index=4, status="succeeded", items=1, succeeded_items=1)
    first.attempts([AttemptRow(whole, 1, "a")])
    first.close()
    with open(layout.log_tree.report_part(1), "a", encoding="utf-8") as f:
        f.write("000000005,1,succ")  # the leader of epoch 1 was killed here

    second = JobLogs(layout, epoch=2)
    torn = Outcome(index=5, status="succeeded", items=1, succeeded_items=1)
    second.attempts([AttemptRow(whole, 1, "b"), AttemptRow(torn, 1, "b")])
    second.close()
    merge_reports([layout.log_tree.report_part(1), layout.log_tree.report_part(2)])
    with open(layout.log_tree.report_part(1), newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == list(CSV_COLUMNS)
    assert [(r[0], r[1], r[3]) for r in rows[1:]] == [
        ("000000004", "1", "a"),
        ("000000005", "1", "b"),
    ]


def test_a_leader_reopening_its_part_cuts_its_own_torn_row(tmp_path: Path) -> None:
    from prsd.leader.run.joblogs import AttemptRow, JobLogs
    from prsd.spool.layout import JobLayout
    from prsd.wire.records import Outcome

    layout = JobLayout(tmp_path / "job", "job")
    JobLogs(layout, epoch=3).close()
    path = layout.log_tree.report_part(3)
    with open(path, "a", encoding="utf-8") as f:
        f.write("000000007,2,fai")
    logs = JobLogs(layout, epoch=3)
    logs.attempts([AttemptRow(Outcome(index=7, status="failed", items=1), 2, "n")])
    logs.close()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and lines[1].startswith("000000007,2,failed,n,")
