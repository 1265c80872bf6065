"""A leader killed between taking a job out of the inbox and marking it active.

Intake moves ``inbox/<name>`` to ``jobs/<id>``, seals it and writes its spec, and only
then writes ``active/<id>``. The crash window is reproduced exactly: the test process
runs the leader's own intake steps (as root, as the leader does) and stops where a
``kill -9`` would; then a real leader and agent start on the spool. The job must be
taken on and completed, never left in a folder nobody drives.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import pytest

from prsd.leader.intake.intake import load_taken_job, take_in
from prsd.spool.jobid import registry
from prsd.spool.jobowner import write_job_owner
from prsd.spool.jobroot import seal_job_root
from prsd.spool.opening import open_spool, stranded_jobs
from tests.fleet import Fleet
from tests.helpers import wait_until
from tests.jobkit import make_job

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

QUICK = """
def run(mini_batch):
    return [os.path.basename(p) for p in mini_batch]
import os
"""

YAML = """
name: {name}
input_data: ./data
mini_batch_size: "2"
output_action: append_row
resources: {{max_concurrency_per_instance: 1}}
task:
  code: ./code
  entry_script: score.py
"""


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    f = Fleet(tmp_path / "spool", tmp_path / "logs")
    try:
        yield f
    finally:
        f.close()


@pytest.mark.parametrize("stop_after", ["move", "owner", "spec"])
def test_a_job_taken_in_but_never_marked_active_is_taken_on(
    fleet: Fleet, tmp_path: Path, stop_after: str
) -> None:
    spool = open_spool(fleet.spool)
    job = make_job(tmp_path / "job", QUICK, YAML.format(name="stranded"), files=5)
    queued = fleet.submit(job)
    layout = take_in(spool, queued)  # the inbox folder moved in: the leader's first step
    assert layout is not None
    if stop_after == "owner":  # sealed and its owner recorded; killed before the rest
        write_job_owner(layout, seal_job_root(layout.root).owner)
    if stop_after == "spec":
        load_taken_job(layout)  # sealed, owner and spec written; killed before active/
        assert layout.spec.exists()
    assert not (spool.active / layout.job_id).exists()
    assert not os.listdir(spool.inbox)  # nothing left for an intake to find
    assert stranded_jobs(spool) == [layout.job_id]
    beside = fleet.submit(make_job(tmp_path / "beside", QUICK, YAML.format(name="beside"), files=3))
    fleet.leader()
    fleet.agent("n1")
    for job_id in (layout.job_id, beside):
        wait_until(lambda: all(fleet.final(j) for j in (layout.job_id, beside)), 60, "jobs ended")
        final = fleet.final(job_id)
        assert final is not None and final["state"] == "Completed", final
    out = (layout.root / "outputs" / "parallel_run_step.txt").read_text(encoding="utf-8")
    assert sorted(out.split()) == sorted(p.name for p in (job / "data").iterdir())
    assert stranded_jobs(spool) == []
    logs = "".join(p.read_text(encoding="utf-8") for p in fleet.logs.glob("leader.*.log"))
    assert "a job taken in was never marked active" in logs
    assert json.loads((layout.root / "owner.json").read_bytes())["uid"] == os.geteuid()


def test_a_job_sealed_before_its_owner_record_keeps_its_owner(fleet: Fleet, tmp_path: Path) -> None:
    """Killed after sealing (the folder is the daemons' now) but before owner.json: the
    owner taken when the folder moved in (kept in the id registry) is the job's owner."""
    spool = open_spool(fleet.spool)
    job = make_job(tmp_path / "job", QUICK, YAML.format(name="sealed"), files=2)
    queued = fleet.submit(job)
    for folder in (job, spool.inbox / queued):  # submitted by someone else than the daemons
        for path in (folder, *folder.rglob("*")):
            os.chown(path, 1234, 1234, follow_symlinks=False)
    layout = take_in(spool, queued)
    assert layout is not None
    seal_job_root(layout.root)
    assert not layout.owner_record.exists()
    fleet.leader()
    taken = lambda: layout.spec.exists() or fleet.final(layout.job_id) is not None
    wait_until(taken, 60, "the job taken on again")
    owner = json.loads(layout.owner_record.read_bytes())
    assert (owner["uid"], owner["gid"]) == (1234, 1234)
    final = fleet.final(layout.job_id)
    # Under root daemons its spec is loaded and its input read as uid 1234, which may not
    # run the suite's interpreter (under a 0700 /root): a failure then names that uid.
    assert final is None or final["state"] != "Failed" or "(uid 1234)" in str(final["reason"]), (
        final
    )


def test_a_job_sealed_with_no_owner_anywhere_fails_and_says_why(
    fleet: Fleet, tmp_path: Path
) -> None:
    """Sealed, no owner record, and no owner in the id registry (a marker from an older
    version): who owns it cannot be known, so it fails with a reason rather than run as root."""
    spool = open_spool(fleet.spool)
    queued = fleet.submit(make_job(tmp_path / "job", QUICK, YAML.format(name="lost"), files=2))
    layout = take_in(spool, queued)
    assert layout is not None
    (registry(spool) / layout.job_id).write_bytes(b"given\n")
    os.chown(layout.root, 1234, 1234)
    seal_job_root(layout.root)
    fleet.leader()
    wait_until(lambda: fleet.final(layout.job_id) is not None, 60, "the job ended")
    final = fleet.final(layout.job_id)
    assert final is not None and final["state"] == "Failed", final
    assert "before its owner was recorded: submit the job again" in str(final["reason"])
