"""The job folder's protocol in memory: the same answers as the real folder, and a leader
decision (failing a broken job) tested with no files."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from prsd.leader.end.guard import end_broken
from prsd.spool.jobfolder import JobFolder
from prsd.spool.jobowner import JobOwner, OwnerRecordError, write_job_owner
from prsd.spool.layout import SpoolLayout, TaskName
from prsd.spool.memfolder import MemoryJobFolder

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.spool.jobfolder import JobFiles

TASKS = ("000000001.a0.e1", "000000002.a0.e1", "000000003.a1.e2")


def _folders(tmp_path: Path) -> tuple[JobFolder, MemoryJobFolder]:
    spool = SpoolLayout(tmp_path / "spool")
    real = JobFolder(spool, "job-1")
    memory = MemoryJobFolder(spool.job("job-1"))
    layout = real.layout
    files = [
        layout.done / "0000" / f"{TASKS[0]}.n1",
        layout.done / "0000" / f"{TASKS[1]}.n2",
        layout.done / "0000" / ".tmp-x",
        layout.returned / TASKS[2],
        layout.void / f"{TASKS[1]}.n2",
        layout.claimed_dir("n1") / TASKS[0],
    ]
    for path in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"task")
        memory.put(path, b"task")
    return real, memory


def test_memory_folder_answers_as_the_real_one(tmp_path: Path) -> None:
    real, memory = _folders(tmp_path)
    folders: list[JobFiles] = [real, memory]
    for folder in folders:
        assert folder.done_names("0000") == [f"{TASKS[0]}.n1", f"{TASKS[1]}.n2"]
        assert folder.done_names("0001") == []
        assert folder.returned_names() == [TASKS[2]]
        assert folder.void_names() == [f"{TASKS[1]}.n2"]
        assert folder.claimed_names("n1") == [TASKS[0]]
        assert folder.claimed_names("n9") == []
        assert folder.claimant_nodes() == ["n1"]
        again = TaskName.parse(TASKS[2])
        assert again is not None
        src = folder.layout.returned_task(again)
        assert folder.requeue(src, again.next_attempt(3)) is True
        assert folder.requeue(src, again.next_attempt(3)) is True  # a retried move: done
        assert folder.requeue(src, again.next_attempt(4)) is False  # moved once only
        assert folder.returned_names() == []
        assert folder.exists(folder.layout.pending_task(again.next_attempt(3)))
        with pytest.raises(OwnerRecordError):
            folder.owner()


def test_owner_is_the_record_and_nothing_else(tmp_path: Path) -> None:
    real, _ = _folders(tmp_path)
    write_job_owner(real.layout, JobOwner(1234, 1234, "alice"))
    memory = MemoryJobFolder(real.layout, JobOwner(1234, 1234, "alice"))
    assert real.owner() == memory.owner() == JobOwner(1234, 1234, "alice")


def test_a_broken_job_ends_with_its_final_record_last_without_files(tmp_path: Path) -> None:
    folder = MemoryJobFolder(SpoolLayout(tmp_path / "none").job("job-1"))
    tree = folder.layout.log_tree
    final = end_broken(folder, "system error: boom")
    assert [line.split()[1] for line in folder.log if line.startswith("write")] == [
        str(tree.job_result),
        str(tree.job_error),
        str(tree.user_error),
        str(folder.layout.status),
        str(folder.layout.final),
    ]
    assert folder.log[-1] == "remove active" and not folder.active
    assert json.loads(folder.files[folder.layout.final])["state"] == final.state == "Failed"
    assert b"boom" in folder.files[tree.user_error]
    assert not (tmp_path / "none").exists()


def test_a_broken_job_keeps_the_error_text_its_driver_wrote(tmp_path: Path) -> None:
    folder = MemoryJobFolder(SpoolLayout(tmp_path).job("job-1"))
    tree = folder.layout.log_tree
    folder.put(tree.job_error, b"the driver's own summary\n")
    end_broken(folder, "boom")
    assert folder.files[tree.job_error] == b"the driver's own summary\n"
    assert str(tree.user_error) not in " ".join(folder.log)


def test_a_broken_job_still_gets_its_final_record_when_a_text_cannot_be_written(
    tmp_path: Path,
) -> None:
    folder = MemoryJobFolder(SpoolLayout(tmp_path).job("job-1"))
    folder.fail.add(folder.layout.log_tree.job_result)
    folder.fail.add(folder.layout.status)
    final = end_broken(folder, "boom")  # never raises
    assert folder.layout.log_tree.job_result not in folder.files
    assert folder.layout.status not in folder.files
    assert json.loads(folder.files[folder.layout.final])["reason"] == final.reason
    assert not folder.active
