"""A confined job may read another job's outputs/ only when the leader recorded the same owner."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from prsd.jobspec.paths import Roots
from prsd.spool.jobowner import JobOwner, write_job_owner
from prsd.spool.layout import JobLayout

if TYPE_CHECKING:
    from pathlib import Path


def _job(spool: Path, name: str, uid: int) -> Path:
    root = spool / "jobs" / name
    (root / "outputs" / "o").mkdir(parents=True)
    (root / "logs").mkdir()
    write_job_owner(JobLayout(root, name), JobOwner(uid, uid, f"u{uid}"))
    return root


def test_an_earlier_steps_outputs_are_readable_by_the_same_owner_only(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    mine = _job(spool, "make", 4321)
    other = _job(spool, "theirs", 4322)
    me = spool / "jobs" / "score"
    me.mkdir()
    daemons = os.geteuid() if os.geteuid() != 4321 else 0
    roots = Roots.of([tmp_path / "nowhere"]).for_job(
        owner_uid=4321, daemon_uid=daemons, spool=spool, job_root=me
    )
    assert roots.confined
    assert roots.problem(mine / "outputs" / "o") is None
    assert roots.problem(mine / "outputs") is None
    assert "outside this job's folder" in str(roots.problem(other / "outputs" / "o"))
    assert "outside this job's folder" in str(roots.problem(mine / "logs"))
    assert roots.problem(mine / "outputs" / "o", output=True) is not None  # never written
    (other / "owner.json").unlink()
    (other / "owner.json").write_text('{"uid": 4321, "gid": 4321, "user": "u4321"}')
    os.chown(other / "owner.json", 4321, 4321)  # planted by the user: not believed
    assert roots.problem(other / "outputs" / "o") is not None
