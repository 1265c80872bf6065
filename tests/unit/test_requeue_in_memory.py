"""Tasks and results through the job folder: the real folder and the one in memory give
the same answers, and the requeue of a lost node's claims is decided with no files."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import pytest

from prsd.leader.run.book import JobBook, Timeouts
from prsd.leader.run.ledger import Ledger
from prsd.leader.run.requeues import Requeues
from prsd.leader.run.tasks import TaskTable
from prsd.leader.run.verdict import Thresholds
from prsd.spool.finalrecord import FinalState
from prsd.spool.jobfolder import JobFolder
from prsd.spool.layout import SpoolLayout, TaskName
from prsd.spool.memfolder import MemoryJobFolder
from prsd.spool.seats import seats_dir, take_seat
from prsd.spool.taskrecords import ResultMeta, TaskBody
from prsd.wire.fields import RecordError
from prsd.wire.records import MiniBatch, Outcome

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from pathlib import Path

    from prsd.leader.run.joblogs import AttemptRow
    from prsd.leader.takeover.takeover import TakeOver
    from prsd.spool.jobfolder import JobFiles
    from prsd.spool.layout import JobLayout


def test_task_files_and_results_read_back_alike(tmp_path: Path) -> None:
    spool = SpoolLayout(tmp_path / "spool")
    real = JobFolder(spool, "job-1")
    memory = MemoryJobFolder(spool.job("job-1"))
    task = TaskName(3, 1, 2)
    body = TaskBody("job-1", "files", (MiniBatch(3, ["/in/a"], 1), MiniBatch(4, ["/in/b"], 1)))
    meta = ResultMeta(task.name, "n1", (Outcome(3, "succeeded"), Outcome(4, "failed")))
    layout = real.layout
    folders: list[JobFiles] = [real, memory]
    for folder in folders:
        folder.make_shard(task.shard)
        folder.write_task(task, body, durable=False)
        assert folder.read_task(layout.pending_task(task)) == body
        with pytest.raises(FileNotFoundError):
            folder.read_task(layout.done_task(task, "n1"))
        assert folder.read_result(task, "n1") is None
    layout.result(task, "n1").write_bytes(b"rows\n" + meta.encode())
    found = real.read_result(task, "n1")
    assert found is not None and found.meta == meta
    memory.put_result(task, "n1", found)
    assert memory.read_result(task, "n1") == found
    assert memory.done_shards() == [] and real.done_shards() == [task.shard]
    layout.done_task(task, "n1").write_bytes(b"{not a task")
    memory.put(layout.done_task(task, "n1"), b"{not a task")
    assert real.done_shards() == memory.done_shards() == [task.shard]
    for folder in folders:
        with pytest.raises(RecordError):
            folder.read_task(layout.done_task(task, "n1"))


def test_seats_of_a_node_are_freed_alike(tmp_path: Path) -> None:
    spool = SpoolLayout(tmp_path / "spool")
    real = JobFolder(spool, "job-1")
    memory = MemoryJobFolder(spool.job("job-1"))
    assert take_seat(real.layout, "n1", 2) and take_seat(real.layout, "n2", 2)
    memory.seats.update({"0": "n1", "1": "n2"})
    assert real.free_seats("n1") == memory.free_seats("n1") == 1
    assert real.free_seats("n1") == memory.free_seats("n1") == 0
    assert sorted(p.name for p in seats_dir(real.layout).iterdir()) == ["1"]
    assert memory.seats == {"1": "n2"}


@dataclass
class Driver(Requeues):
    """The parts of a job's driver a requeue reads and writes, the folder in memory,
    with the driver's own requeue steps mixed in."""

    layout: JobLayout
    folder: MemoryJobFolder
    table: TaskTable
    book: JobBook
    issued: Names
    logs: Lines
    fence: Callable[[], None] = lambda: None
    takeover: TakeOver | None = None
    final: FinalState | None = None


@dataclass
class Names:
    """The issue log's lines, kept."""

    names: list[str] = field(default_factory=list)

    def add(self, names: Iterable[str]) -> None:
        self.names.extend(names)


@dataclass
class Lines:
    """The job's attempt rows and leader log lines, kept."""

    rows: list[AttemptRow] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    def attempts(self, rows: list[AttemptRow]) -> None:
        self.rows.extend(rows)

    def master(self, message: str) -> None:
        self.lines.append(message)


def _driver(tmp_path: Path) -> Driver:
    """Two tasks written to a folder in memory: mini-batches 0-1 claimed by n1, 2 by n2."""
    folder = MemoryJobFolder(SpoolLayout(tmp_path / "none").job("job-1"))
    issued = Names()
    table = TaskTable(folder, "files", 5, durable=True, on_issue=issued.add)
    ledger = Ledger(max_retries=3)
    for i in range(3):
        ledger.plan(i, 1)
    book = JobBook(ledger, Thresholds(), Timeouts(600.0, 600.0), started=0.0)
    mbs = [MiniBatch(i, [f"/in/{i}"], 1) for i in range(3)]
    for node, out in (("n1", table.write(mbs[:2], 1)), ("n2", table.write(mbs[2:], 1))):
        claimed = folder.layout.claimed_task(node, out.task)
        folder.files[claimed] = folder.files.pop(folder.layout.pending_task(out.task))
    folder.seats.update({"0": "n1", "1": "n2"})
    folder.log.clear()
    return Driver(folder.layout, folder, table, book, issued, Lines())


def test_a_lost_nodes_claims_go_back_to_pending_as_their_next_attempt(tmp_path: Path) -> None:
    driver = _driver(tmp_path)
    folder, layout = driver.folder, driver.layout
    old, new = TaskName(0, 1, 5), TaskName(0, 2, 5)
    assert folder.claimant_nodes() == ["n1", "n2"]
    assert driver.requeue_lost_node("n1", "its heartbeat stopped") == 1
    assert folder.log == [
        f"move {layout.claimed_task('n1', old)} {layout.pending_task(new)}",
        "remove seat 0",
    ]
    assert folder.claimed_names("n1") == [] and folder.claimed_names("n2") == [
        TaskName(2, 1, 5).name
    ]
    assert folder.read_task(layout.pending_task(new)).mini_batches[0].index == 0
    assert sorted(driver.table.outstanding) == sorted([new.name, TaskName(2, 1, 5).name])
    assert driver.table.outstanding[new.name].indices == (0, 1)
    assert driver.issued.names[-1] == new.name
    assert [(r.outcome.index, r.outcome.status, r.node_id) for r in driver.logs.rows] == [
        (0, "requeued", "n1"),
        (1, "requeued", "n1"),
    ]
    assert [driver.book.ledger.attempt(i) for i in range(3)] == [2, 2, 1]
    assert driver.book.requeued_lost == 1 and driver.book.ledger.requeues == 2
    assert folder.seats == {"1": "n2"}
    assert driver.logs.lines == [
        f"task {old.name} its heartbeat stopped; requeued as {new.name}",
        "node n1's seat is free for another node",
    ]


def test_a_claim_whose_commit_was_ingested_is_left_alone(tmp_path: Path) -> None:
    driver = _driver(tmp_path)
    folder = driver.folder
    task = TaskName(0, 1, 5)
    driver.table.settle(task.name, "n1")  # its commit was read before the node was lost
    assert driver.requeue_lost_node("n1", "lost") == 0
    assert folder.claimed_names("n1") == [task.name]
    assert [line for line in folder.log if line.startswith("move")] == []
    assert driver.logs.rows == [] and driver.book.ledger.requeues == 0
    assert folder.seats == {"1": "n2"}  # its seat is freed all the same


def test_no_claim_moves_during_a_take_over(tmp_path: Path) -> None:
    driver = _driver(tmp_path)
    driver.takeover = cast("TakeOver", object())  # any take-over in progress
    assert driver.requeue_lost_node("n1", "lost") == 0
    assert driver.folder.log == [] and driver.folder.seats == {"0": "n1", "1": "n2"}


def test_nothing_moves_once_the_job_has_ended(tmp_path: Path) -> None:
    driver = _driver(tmp_path)
    driver.final = FinalState("Failed", "ended", 1, "", "", "")
    assert driver.requeue_lost_node("n1", "lost") == 0
    assert driver.folder.claimed_names("n1") == [TaskName(0, 1, 5).name]
    assert driver.book.ledger.requeues == 0
