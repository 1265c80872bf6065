"""Task files written in one batch: each flushed before its rename, each folder once after.

A child process writes task files through :class:`prsd.leader.run.tasks.TaskTable` on
a real spool under ``strace``; the test reads the system calls it made, in order: the
``fsync`` of every task file's temp name comes before the rename that publishes it, and
each ``pending/<shard>`` folder is flushed exactly once, after the last rename into it,
also when a later write of the batch fails.
"""

from __future__ import annotations

import re
import subprocess
import sys
from typing import TYPE_CHECKING

from prsd.spool.layout import SHARD_SIZE
from prsd.spool.opening import open_spool

if TYPE_CHECKING:
    from pathlib import Path

CHILD = r"""
import shutil, sys
from pathlib import Path
from prsd.leader.run.tasks import TaskTable
from prsd.spool.jobfolder import JobFolder
from prsd.spool.layout import JobLayout
from prsd.wire.records import MiniBatch

spool, job_id, size, scene = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
layout = JobLayout(spool / "jobs" / job_id, job_id)
table = TaskTable(JobFolder.of(layout), "files", 1, durable=True)

def mbs(first, n):
    return [MiniBatch(i, [f"/in/{i}"], 1) for i in range(first, first + n)]

if scene == "single":  # outside a batch: every write flushes its own folder
    table.write(mbs(0, 2), 1)
    table.write(mbs(2, 2), 1)
elif scene == "batch":
    with table.batch():
        table.write(mbs(0, 2), 1)
        table.write(mbs(2, 3), 1)
        table.write(mbs(size, 1), 1)  # the next shard
        table.write(mbs(5, 1), 1)
elif scene == "failing":
    table.ensure_shard(f"{1:06d}")
    shutil.rmtree(layout.pending / f"{1:06d}")  # the next shard's folder is gone
    try:
        with table.batch():
            table.write(mbs(0, 2), 1)
            table.write(mbs(size, 1), 1)
    except FileNotFoundError:
        print("write failed")
"""


def _trace(tmp_path: Path, scene: str) -> tuple[list[str], str]:
    spool = open_spool(tmp_path / "spool")
    job_id = "job-sync"
    (spool.root / "jobs" / job_id).mkdir(parents=True)
    log = tmp_path / f"{scene}.strace"
    cmd = [
        "strace", "-f", "-y", "-qq", "-o", str(log),
        "-e", "trace=fsync,fdatasync,rename,renameat,renameat2",
        sys.executable, "-c", CHILD, str(spool.root), job_id, str(SHARD_SIZE), scene,
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)
    return log.read_text().splitlines(), done.stdout


def _events(lines: list[str]) -> list[tuple[str, str]]:
    """(call, path) in order: fsync of a path, or rename to a path (its final name)."""
    out: list[tuple[str, str]] = []
    for line in lines:
        m = re.search(r"\b(fsync|fdatasync)\(\d+<([^>]*)>\)\s+=\s+0", line)
        if m:
            out.append(("fsync", m.group(2)))
            continue
        m = re.search(r"\brename(?:at2?)?\(.*\"([^\"]*)\"(?:, \d+)?\)\s+=\s+0", line)
        if m:
            out.append(("rename", m.group(1)))
    return out


def _check_each_file_flushed_before_its_rename(events: list[tuple[str, str]]) -> list[str]:
    renamed = [path for call, path in events if call == "rename" and "/pending/" in path]
    for path in renamed:
        name = path.rsplit("/", 1)[1]
        flushed = [i for i, (c, p) in enumerate(events) if c == "fsync" and f"/.tmp-{name}." in p]
        assert flushed, f"{name}: its file was never flushed"
        assert flushed[0] < events.index(("rename", path)), f"{name} renamed before its fsync"
    return renamed


def _folder_flushes(events: list[tuple[str, str]], folder: str) -> list[int]:
    return [i for i, (c, p) in enumerate(events) if c == "fsync" and p == folder]


def test_a_batch_flushes_each_task_folder_once_after_its_last_rename(tmp_path: Path) -> None:
    lines, _ = _trace(tmp_path, "batch")
    events = _events(lines)
    renamed = _check_each_file_flushed_before_its_rename(events)
    assert len(renamed) == 4, lines
    pending = tmp_path / "spool" / "jobs" / "job-sync" / "tasks" / "pending"
    for shard, tasks in ((f"{0:06d}", 3), (f"{1:06d}", 1)):
        folder = str((pending / shard).resolve())
        flushes = _folder_flushes(events, folder)
        assert len(flushes) == 1, (shard, events)  # once for the batch, not once a task
        last = max(i for i, (c, p) in enumerate(events) if c == "rename" and p.startswith(folder))
        assert flushes[0] > last
        assert sum(1 for p in renamed if p.startswith(folder + "/")) == tasks


def test_outside_a_batch_each_write_flushes_its_folder(tmp_path: Path) -> None:
    lines, _ = _trace(tmp_path, "single")
    events = _events(lines)
    assert len(_check_each_file_flushed_before_its_rename(events)) == 2
    pending = tmp_path / "spool" / "jobs" / "job-sync" / "tasks" / "pending"
    assert len(_folder_flushes(events, str((pending / f"{0:06d}").resolve()))) == 2


def test_a_failed_write_still_flushes_the_folders_of_those_written(tmp_path: Path) -> None:
    lines, out = _trace(tmp_path, "failing")
    assert out.strip() == "write failed"
    events = _events(lines)
    assert len(_check_each_file_flushed_before_its_rename(events)) == 1
    pending = tmp_path / "spool" / "jobs" / "job-sync" / "tasks" / "pending"
    flushes = _folder_flushes(events, str((pending / f"{0:06d}").resolve()))
    assert len(flushes) == 1, events
