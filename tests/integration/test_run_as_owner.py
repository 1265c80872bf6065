"""Run-as-owner end to end: a root agent runs a user's job as that user, with the user's groups.

A real unprivileged user and group are created with useradd/groupadd (CI runs as root),
real ``prsd leader`` and ``prsd agent`` daemons run as root, and the job folder is
dropped into the inbox owned by that user, as a user's own submission would be.
"""

from __future__ import annotations

import grp
import os
import pwd
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from prsd.storage.spool import open_spool
from tests.helpers import wait_until

if TYPE_CHECKING:
    from collections.abc import Iterator

PRSD = [sys.executable, "-m", "prsd.daemon"]

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
def user() -> Iterator[pwd.struct_passwd]:
    """A fresh unprivileged user with a supplementary group, deleted afterwards."""
    assert os.geteuid() == 0, "this test needs root (CI runs as root)"
    suffix = secrets.token_hex(3)
    name, extra = f"prsdu{suffix}", f"prsdg{suffix}"
    subprocess.run(["groupadd", extra], check=True)
    try:
        subprocess.run(["useradd", "-M", "-s", "/usr/sbin/nologin", "-G", extra, name], check=True)
        try:
            yield pwd.getpwnam(name)
        finally:
            subprocess.run(["userdel", name], check=False)
    finally:
        subprocess.run(["groupdel", extra], check=False)


def _python_for(user: pwd.struct_passwd) -> str:
    """An interpreter this user may run (the test's own may live under /root)."""
    for candidate in (os.path.realpath(sys.executable), "/usr/bin/python3"):
        probe = subprocess.run(
            ["runuser", "-u", user.pw_name, "--", candidate, "-c", "pass"],
            stderr=subprocess.DEVNULL,
            check=False,
        )
        if probe.returncode == 0:
            return candidate
    raise AssertionError(f"no Python interpreter is usable by {user.pw_name}")


@pytest.fixture
def reachable_checkout() -> Iterator[None]:
    """Workers run as the job's owner start from prsd's own ``worker/boot.py``: others
    must be able to enter every folder above the checkout and list the checkout's
    folders on the way (imports list them). A ``mktemp -d`` clone is a 0700 folder: it
    and any such folder get those rights for the test, and their modes back after."""
    from prsd.worker import boot

    installation = Path(boot.__file__).parents[2]
    changed: list[tuple[Path, int]] = []
    for folder in reversed(Path(boot.__file__).parents):
        mode = folder.stat().st_mode
        need = stat.S_IXOTH | (stat.S_IROTH if folder.is_relative_to(installation) else 0)
        if mode & need != need:
            changed.append((folder, mode))
            folder.chmod(stat.S_IMODE(mode) | need)
    try:
        yield
    finally:
        for folder, mode in reversed(changed):
            folder.chmod(stat.S_IMODE(mode))


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            os.chown(os.path.join(folder, name), uid, gid, follow_symlinks=False)
    os.chown(root, uid, gid)


def _drop_job(spool: Path, user: pwd.struct_passwd, python: str) -> Path:
    """The user's job folder, written beside the inbox and renamed in (job.yaml complete)."""
    staging = spool / "inbox" / ".owned"
    (staging / "code").mkdir(parents=True)
    (staging / "code" / "score.py").write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
    (staging / "data").mkdir()
    for i in range(4):
        (staging / "data" / f"item{i}.txt").write_text(f"{i}\n", encoding="utf-8")
    (staging / "job.yaml").write_text(textwrap.dedent(YAML.format(python=python)), encoding="utf-8")
    _chown_tree(staging, user.pw_uid, user.pw_gid)
    final = spool / "inbox" / "owned"
    staging.rename(final)
    return final


@pytest.mark.usefixtures("reachable_checkout")
def test_root_agent_runs_the_job_as_its_owner(user: pwd.struct_passwd) -> None:
    """id inside run() is the owner's (with its groups); the job's files in the spool are the owner's."""
    base = Path(
        tempfile.mkdtemp(prefix="prsd-owner-")
    )  # /tmp/pytest-of-root is not traversable by others
    base.chmod(0o755)
    spool = base / "spool"
    open_spool(spool)
    env = dict(os.environ, PRSD_GPU_COUNT="0")
    daemons: list[subprocess.Popen[bytes]] = []
    try:
        with open(base / "daemons.log", "wb") as log:
            for role in (["leader"], ["agent", "--node-id", "n1"]):
                command = [*PRSD, *role, "--spool", str(spool)]
                daemons.append(subprocess.Popen(command, env=env, stdout=log, stderr=log))
        python = _python_for(user)
        _drop_job(spool, user, python)
        jobs = spool / "jobs"
        wait_until(
            lambda: any((j / "state" / "final.json").exists() for j in jobs.iterdir()),
            120,
            "the job's end",
        )
        (job,) = [j for j in jobs.iterdir() if not j.name.startswith(".")]  # .ids: the registry
        result = (job / "logs" / "job_result.txt").read_text(encoding="utf-8")
        assert result.startswith("Completed"), result + (base / "daemons.log").read_text()
        rows = (job / "outputs" / "out.txt").read_text(encoding="utf-8").splitlines()
        extra_gid = grp.getgrnam(f"prsdg{user.pw_name[5:]}").gr_gid
        groups = ",".join(str(g) for g in sorted({user.pw_gid, extra_gid}))
        ident = f"uid={user.pw_uid} euid={user.pw_uid} gid={user.pw_gid} groups={groups}"
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
            assert (info.st_uid, info.st_gid) == (user.pw_uid, user.pw_gid), path
    finally:
        for proc in daemons:
            proc.terminate()
        for proc in daemons:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(base, ignore_errors=True)
