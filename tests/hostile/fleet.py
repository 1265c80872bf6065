"""Real root daemons and a real unprivileged job owner, for the hostile tests.

The owner is created with useradd (the suite runs as root, as CI does), the spool
lies in a ``mktemp -d`` folder opened to others (``/tmp/pytest-of-root`` is not), and
prsd's checkout is made reachable by the owner for the duration (see
tests/integration/test_run_as_owner.py: workers run as the owner start from prsd's
own ``worker/boot.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from prsd.spool.opening import open_spool
from tests.helpers import final_record, stop_daemons, wait_until
from tests.realusers import (
    chown_tree,
    daemon_python,
    daemon_pythonpath,
    plain_user,
    python_for,
    reachable_checkout,
)

if TYPE_CHECKING:
    import pwd
    from collections.abc import Callable, Iterator

CHECKOUT = Path(__file__).resolve().parents[2]
PYTHONPATH = f"{CHECKOUT}:{sysconfig.get_paths()['purelib']}"
"""prsd and its dependencies, for an owner running the suite's interpreter by its real path."""

SCRIPT = """
def init():
    pass
def run(mini_batch):
    return [f"ok {p.rsplit('/', 1)[-1]}" for p in mini_batch]
"""


def job_yaml(python: str, **over: str) -> str:
    """A job.yaml with 4 files in ./data, one per mini-batch, and the given overrides."""
    v = {
        "name": "case",
        "input_data": "./data",
        "append_row_to": "./outputs/out.txt",
        "concurrency": "1",
        "extra": "",
        **over,
    }
    return (
        textwrap.dedent(
            f"""\
        type: parallel
        name: {v["name"]}
        input_data: {v["input_data"]}
        mini_batch_size: "1"
        resources: {{max_concurrency_per_instance: {v["concurrency"]}}}
        task:
          code: ./code
          entry_script: score.py
          append_row_to: {v["append_row_to"]}
          environment: {{python: {python}}}
        """
        )
        + v["extra"]
    )


@dataclass
class Fleet:
    """A spool served by one root leader and one root agent."""

    base: Path
    spool: Path
    user: pwd.struct_passwd
    python: str
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def log(self) -> Path:
        return self.base / "daemons.log"

    def drop(
        self,
        name: str,
        yaml_text: str,
        script: str = SCRIPT,
        *,
        owner: bool = True,
        user: pwd.struct_passwd | None = None,
        data: Callable[[Path], None] | None = None,
    ) -> None:
        """Write a job folder beside the inbox (the owner's, ``user``'s, or root's) and
        rename it in; ``data`` fills its ``data/`` folder (default: 4 small files)."""
        staging = self.spool / "inbox" / f".{name}"
        (staging / "code").mkdir(parents=True)
        (staging / "code" / "score.py").write_text(textwrap.dedent(script), encoding="utf-8")
        (staging / "data").mkdir()
        if data is None:
            for i in range(4):
                (staging / "data" / f"f{i}.txt").write_text(f"{i}\n", encoding="utf-8")
        else:
            data(staging / "data")
        (staging / "job.yaml").write_text(yaml_text, encoding="utf-8")
        if owner:
            chown_tree(staging, user or self.user)
        staging.rename(self.spool / "inbox" / name)

    def submit_as_owner(self, folder: Path) -> subprocess.CompletedProcess[str]:
        """``prsctl submit`` run as the owner (no allowed roots in its environment)."""
        return self.prsctl_as_owner("submit", str(folder))

    def prsctl_as_owner(self, *args: str, roots: str = "") -> subprocess.CompletedProcess[str]:
        """``prsctl ARGS --spool SPOOL`` run as the owner, with ``PRSD_ALLOWED_ROOTS=roots``."""
        command = [self.python, "-m", "prsd.cli.prsctl", *args, "--spool", str(self.spool)]
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": PYTHONPATH, "PRSD_ALLOWED_ROOTS": roots}
        return subprocess.run(
            ["runuser", "-u", self.user.pw_name, "--", "env",
             *(f"{k}={v}" for k, v in env.items()), *command],
            capture_output=True,
            text=True,
            check=False,
            cwd="/",
        )  # fmt: skip

    def final_of(self, job_id: str) -> tuple[str, str]:
        """Wait for job ``job_id``'s end; its (state, reason)."""
        final = self.spool / "jobs" / job_id / "state" / "final.json"
        wait_until(final.exists, 120, f"job {job_id} to end")
        data = json.loads(final_record(final.parent))
        return str(data["state"]), str(data["reason"])

    def owned_folder(self, name: str, yaml_text: str) -> Path:
        """A job folder of the owner's own, outside the spool (for prsctl submit)."""
        folder = self.base / name
        (folder / "code").mkdir(parents=True)
        (folder / "code" / "score.py").write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
        (folder / "data").mkdir()
        for i in range(4):
            (folder / "data" / f"f{i}.txt").write_text(f"{i}\n", encoding="utf-8")
        (folder / "job.yaml").write_text(yaml_text, encoding="utf-8")
        chown_tree(folder, self.user)
        return folder

    def job(self, name: str) -> Path:
        """The job folder of the job named ``name`` (found by its job.yaml)."""
        found: list[Path] = []

        def taken() -> bool:
            for folder in (self.spool / "jobs").iterdir():
                try:
                    text = (folder / "job.yaml").read_text(encoding="utf-8")
                except OSError:
                    continue
                if f"name: {name}\n" in text:
                    found.append(folder)
                    return True
            return False

        wait_until(taken, 60, f"job {name} taken in")
        return found[0]

    def final(self, name: str) -> tuple[str, str]:
        """Wait for the job's end; its (state, reason)."""
        job = self.job(name)
        wait_until(lambda: (job / "state" / "final.json").exists(), 120, f"job {name} to end")
        data = json.loads(final_record(job / "state"))
        return str(data["state"]), str(data["reason"])

    def result(self, name: str) -> str:
        """The job's logs/job_result.txt."""
        return (self.job(name) / "logs" / "job_result.txt").read_text(encoding="utf-8")

    def status_line(self, name: str) -> str:
        """What ``prsctl status`` says of the job (plain text)."""
        job_id = self.job(name).name
        out = subprocess.run(
            [sys.executable, "-m", "prsd.cli.prsctl", "status", "--spool", str(self.spool), job_id],
            capture_output=True,
            text=True,
            check=False,
        )
        return out.stdout + out.stderr

    def alive(self) -> bool:
        return all(p.poll() is None for p in self.procs)


@contextmanager
def fleet(roots: str) -> Iterator[Fleet]:
    """Root daemons on a fresh spool with ``PRSD_ALLOWED_ROOTS=roots`` ("": none), and an owner."""
    with plain_user("prsdh") as user, reachable_checkout():
        base = Path(tempfile.mkdtemp(prefix="prsd-hostile-"))
        base.chmod(0o755)
        spool = base / "spool"
        open_spool(spool)
        (spool / "inbox").chmod(0o1777)  # anyone submits (docs/deploy.md)
        env = dict(
            os.environ,
            PRSD_GPU_COUNT="0",
            PRSD_ALLOWED_ROOTS=roots.format(base=base),
            PYTHONPATH=daemon_pythonpath(),
        )
        prsd = [daemon_python(), "-m", "prsd.daemon"]  # the owner side runs it as the owner
        f = Fleet(base, spool, user, python_for(user))
        try:
            with open(f.log, "wb") as log:
                for role in (["leader"], ["agent", "--node-id", "n1"]):
                    command = [*prsd, *role, "--spool", str(spool)]
                    f.procs.append(subprocess.Popen(command, env=env, stdout=log, stderr=log))
            yield f
        finally:
            stop_daemons(f.procs)
            shutil.rmtree(base, ignore_errors=True)


def snapshot(*roots: Path) -> dict[str, tuple[int, bytes | str]]:
    """Every file and link under ``roots`` (mode and content, or link target), for comparison."""
    seen: dict[str, tuple[int, bytes | str]] = {}
    for root in roots:
        paths = [root] if not root.is_dir() or root.is_symlink() else [root, *root.rglob("*")]
        for path in paths:
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                seen[str(path)] = (info.st_mode, os.readlink(path))
            elif stat.S_ISREG(info.st_mode):
                seen[str(path)] = (info.st_mode, path.read_bytes())
            else:
                seen[str(path)] = (info.st_mode, "")
    return seen
