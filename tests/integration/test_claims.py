"""Claims, commits and requeues on a real file system, raced by real processes."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING

from prsd.spool.atomic import move_verified, write_atomic
from prsd.spool.claim import commit, list_pending, prepare_node, requeue, try_claim
from prsd.spool.layout import JobLayout, TaskName
from prsd.spool.taskrecords import TaskBody
from prsd.wire.records import MiniBatch
from tests.helpers import wait_until

if TYPE_CHECKING:
    from pathlib import Path

RACER = """
import json, sys
from pathlib import Path
from prsd.spool.claim import list_pending, prepare_node, try_claim
from prsd.spool.layout import JobLayout
job = JobLayout(Path(sys.argv[1]), "j")
node = sys.argv[2]
prepare_node(job, node)
Path(sys.argv[3]).touch()
while not Path(sys.argv[4]).exists():
    pass
got = []
while True:
    listing = list_pending(job, 64)
    if not listing:
        break
    for p in listing:
        c = try_claim(job, node, p)
        if c is not None:
            got.append(c.task.name)
print(json.dumps(got))
"""


def _job(tmp_path: Path) -> JobLayout:
    job = JobLayout(tmp_path / "job", "j")
    for d in job.task_dirs():
        d.mkdir(parents=True, exist_ok=True)
    for node in ("n1", "n2"):
        prepare_node(job, node)
    return job


def _write_tasks(job: JobLayout, n: int) -> list[TaskName]:
    names = []
    for i in range(n):
        t = TaskName(i, 1, 1)
        for base in (job.pending, job.done, job.results):
            (base / t.shard).mkdir(parents=True, exist_ok=True)
        body = TaskBody("j", "files", (MiniBatch(i, [f"/f{i}"], 1),)).encode()
        write_atomic(job.pending_task(t), body, durable=False)
        names.append(t)
    return names


def test_race_of_four_processes_claims_each_task_once(tmp_path: Path) -> None:
    """Four processes racing over 2000 task files: every task claimed exactly once."""
    job = _job(tmp_path)
    names = _write_tasks(job, 2000)
    go = tmp_path / "go"
    procs = []
    for k in range(4):
        ready = tmp_path / f"ready{k}"
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", RACER, str(job.root), f"n{k}", str(ready), str(go)],
                stdout=subprocess.PIPE,
                text=True,
            )
        )
    try:
        wait_until(lambda: all((tmp_path / f"ready{k}").exists() for k in range(4)), 30, "racers")
        go.touch()
        outs = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    finally:
        for p in procs:
            p.kill()
            p.wait()
    claimed = [n for out in outs for n in out]
    assert sorted(claimed) == sorted(t.name for t in names)
    assert len(claimed) == len(set(claimed))
    for k, out in enumerate(outs):
        on_disk = sorted(p.name for p in (job.claimed / f"n{k}").iterdir())
        assert on_disk == sorted(out)
    assert list_pending(job, 10) == []


def test_commit_and_requeue_race_on_one_source(tmp_path: Path) -> None:
    """After a requeue took the claim away, the node's commit fails (its result is void)."""
    job = _job(tmp_path)
    (t,) = _write_tasks(job, 1)
    claim = try_claim(job, "n1", job.pending_task(t))
    assert claim is not None and claim.body
    assert requeue(job, job.claimed_task("n1", t), t.next_attempt(2))
    assert not commit(job, "n1", t)
    assert job.pending_task(t.next_attempt(2)).exists()
    assert not list((job.done / t.shard).iterdir())


def test_commit_then_requeue_loses(tmp_path: Path) -> None:
    """A commit that came first wins; the leader's requeue finds no source."""
    job = _job(tmp_path)
    (t,) = _write_tasks(job, 1)
    assert try_claim(job, "n1", job.pending_task(t)) is not None
    assert commit(job, "n1", t)
    assert not requeue(job, job.claimed_task("n1", t), t.next_attempt(1))
    assert job.done_task(t, "n1").exists()


def test_second_claim_of_one_task_loses(tmp_path: Path) -> None:
    """Claiming a task that is gone returns None, and leaves no file behind."""
    job = _job(tmp_path)
    (t,) = _write_tasks(job, 1)
    assert try_claim(job, "n1", job.pending_task(t)) is not None
    assert try_claim(job, "n2", job.pending_task(t)) is None
    assert not (job.claimed / "n2" / t.name).exists()


def test_move_verified_checks_destination_after_an_error(tmp_path: Path) -> None:
    """A move that errors but whose destination exists counts as done (NFS retransmit)."""
    src = tmp_path / "src"
    dst = tmp_path / "dst"
    dst.write_bytes(b"moved earlier by a retransmitted rename")
    assert move_verified(src, dst)
    assert not move_verified(src, tmp_path / "other")


def test_write_atomic_leaves_no_temp(tmp_path: Path) -> None:
    """An atomic write replaces the file and leaves no temp file behind."""
    path = tmp_path / "f.json"
    write_atomic(path, b"one")
    write_atomic(path, b"two")
    assert path.read_bytes() == b"two"
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]


def test_a_listing_names_the_first_pending_tasks_of_this_epoch_in_order(tmp_path: Path) -> None:
    """Up to ``limit`` names, lowest shard and name first, across shards; a deposed
    leader's older epoch and temp files left out, however many names a shard holds."""
    job = _job(tmp_path)
    epoch_file = job.spool.leader / "epoch-00000002"
    epoch_file.parent.mkdir(parents=True, exist_ok=True)
    epoch_file.write_text("{}")
    first = [TaskName(i, 1, 2) for i in range(0, 40, 2)]  # shard 000000: 20 tasks
    second = [TaskName(4096 + i, 1, 2) for i in range(5)]  # shard 000001: 5 tasks
    stale = TaskName(1, 1, 1)  # epoch 1: a deposed leader's late write
    for t in [*first, *second, stale]:
        (job.pending / t.shard).mkdir(parents=True, exist_ok=True)
        job.pending_task(t).write_bytes(b"{}")
    (job.pending / first[0].shard / ".tmp-000000003.a1.e2.1-ab").write_bytes(b"")

    def names(limit: int) -> list[str]:
        return [p.name for p in list_pending(job, limit)]

    assert names(3) == [t.name for t in first[:3]]
    assert names(20) == [t.name for t in first]
    assert names(22) == [t.name for t in [*first, *second[:2]]]
    assert names(100) == [t.name for t in [*first, *second]]
    assert all(p.parent == job.pending / p.parent.name for p in list_pending(job, 100))
