"""Run-as-owner end to end: a root agent runs a user's job as that user, with the user's groups.

The leader seals the job folder at intake (``jobs/<id>/`` becomes root's, mode 0711)
and records the owner in ``owner.json``; the agent takes the identity from that record.

A real unprivileged user and group are created with useradd/groupadd (CI runs as root),
real ``prsd leader`` and ``prsd agent`` daemons run as root, and the job folder is
dropped into the inbox owned by that user, as a user's own submission would be.
"""

from __future__ import annotations

import grp
import json
import os
import shutil
import stat
import subprocess
import tempfile
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from prsd.spool.opening import open_spool
from tests.helpers import stop_daemons, wait_until
from tests.realusers import (
    User,
    chown_tree,
    daemon_python,
    daemon_pythonpath,
    python_for,
    reachable_checkout,
    real_users,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

PRSD = [daemon_python(), "-m", "prsd.daemon"]

SCRIPT = """
    import os
    def init():
        pass
    def run(mini_batch):
        with open("written_by_run.txt", "w") as f:
            f.write("hello")
        groups = ",".join(str(g) for g in sorted(os.getgroups()))
        return [f"{os.path.basename(p)} uid={os.getuid()} euid={os.geteuid()} gid={os.getgid()} groups={groups}"
                for p in mini_batch]
"""

YAML = """
    type: parallel
    name: owned
    input_data: ./data
    mini_batch_size: "2"
    resources: {{max_concurrency_per_instance: 1}}
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
      environment: {{python: {python}}}
"""


@pytest.fixture
def user() -> Iterator[User]:
    """A fresh unprivileged user with a supplementary group, deleted afterwards."""
    with real_users(1) as (made,):
        yield made


@pytest.fixture
def checkout_for_users() -> Iterator[None]:
    with reachable_checkout():
        yield


def _drop_job(spool: Path, user: User, python: str) -> Path:
    """The user's job folder, written beside the inbox and renamed in (job.yaml complete)."""
    staging = spool / "inbox" / ".owned"
    (staging / "code").mkdir(parents=True)
    (staging / "code" / "score.py").write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
    (staging / "data").mkdir()
    for i in range(4):
        (staging / "data" / f"item{i}.txt").write_text(f"{i}\n", encoding="utf-8")
    (staging / "job.yaml").write_text(textwrap.dedent(YAML.format(python=python)), encoding="utf-8")
    chown_tree(staging, user)
    final = spool / "inbox" / "owned"
    staging.rename(final)
    return final


@pytest.mark.usefixtures("checkout_for_users")
def test_root_agent_runs_the_job_as_its_owner(user: User) -> None:
    """id inside run() is the owner's (with its groups); the job's files in the spool are the owner's."""
    base = Path(
        tempfile.mkdtemp(prefix="prsd-owner-")
    )  # /tmp/pytest-of-root is not traversable by others
    base.chmod(0o755)
    spool = base / "spool"
    open_spool(spool)
    env = dict(os.environ, PRSD_GPU_COUNT="0", PYTHONPATH=daemon_pythonpath())
    daemons: list[subprocess.Popen[bytes]] = []
    try:
        with open(base / "daemons.log", "wb") as log:
            for role in (["leader"], ["agent", "--node-id", "n1"]):
                command = [*PRSD, *role, "--spool", str(spool)]
                daemons.append(subprocess.Popen(command, env=env, stdout=log, stderr=log))
        python = python_for(user)
        _drop_job(spool, user, python)
        jobs = spool / "jobs"
        wait_until(
            lambda: any((j / "state" / "final.json").exists() for j in jobs.iterdir()),
            120,
            "the job's end",
        )
        (job,) = [j for j in jobs.iterdir() if not j.name.startswith(".")]  # .ids: the registry
        assert job.name.startswith("owned-"), "a hand-dropped folder gets a fresh id"
        sealed = os.lstat(job)
        assert (sealed.st_uid, stat.S_IMODE(sealed.st_mode)) == (0, 0o711), "the daemons' root"
        record = json.loads((job / "owner.json").read_bytes())
        assert (record["uid"], record["gid"]) == (user.uid, user.gid), "the recorded owner"
        result = (job / "logs" / "job_result.txt").read_text(encoding="utf-8")
        assert result.startswith("Completed"), result + (base / "daemons.log").read_text()
        rows = (job / "outputs" / "out.txt").read_text(encoding="utf-8").splitlines()
        extra_gid = grp.getgrnam(user.extra_group).gr_gid
        groups = ",".join(str(g) for g in sorted({user.gid, extra_gid}))
        ident = f"uid={user.uid} euid={user.uid} gid={user.gid} groups={groups}"
        assert rows == [f"item{i}.txt {ident}" for i in range(4)]
        owned = [
            *job.glob("work/n1/process*/written_by_run.txt"),
            *job.glob("work/n1/process*"),
            *job.glob("logs/user/stdout/n1/*.stdout.txt"),
            *job.glob("logs/user/entry_script_log/n1/*"),
            *job.glob("results/*/*.res"),
        ]
        assert len(owned) >= 5, owned
        for path in owned:
            info = os.lstat(path)
            assert (info.st_uid, info.st_gid) == (user.uid, user.gid), path
    finally:
        stop_daemons(daemons)
        shutil.rmtree(base, ignore_errors=True)
