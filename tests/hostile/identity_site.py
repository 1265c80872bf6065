"""The spool, daemons and users the identity cases share (tests/hostile/test_identity.py).

:class:`Site` starts root daemons on a fresh spool and makes job folders of a user's
own; the helpers act as a user (``prsctl``), read a tree for "nothing changed", and
load every lazily imported module before a child drops to a user (see users.py).
"""

from __future__ import annotations

import contextlib
import encodings.utf_8_sig
import io
import json
import os
import subprocess
import textwrap
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import prsd.cli.logfiles
import prsd.cli.logmerge
from prsd import daemon
from prsd.cli import prsctl
from prsd.read.jobs import job_ids
from prsd.spool.opening import open_spool
from prsd.submit import submit
from tests.helpers import final_record, stop_daemons, wait_until
from tests.realusers import (
    User,
    as_user,
    chown_tree,
    daemon_python,
    daemon_pythonpath,
    open_base,
    python_for,
    reachable_checkout,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping
    from pathlib import Path

assert prsd.cli.logfiles and prsd.cli.logmerge  # imported before any fork (see users.py)
assert encodings.utf_8_sig  # job.yaml is read as utf-8-sig

PRSD = [daemon_python(), "-m", "prsd.daemon"]  # the owner side runs it as the owner

SCRIPT = """
    import time
    def init():
        pass
    def run(mini_batch):
        time.sleep({pause})
        return ["{tag} " + p.rsplit("/", 1)[-1] for p in mini_batch]
"""

YAML = """
    type: parallel
    name: {name}
    input_data: ./data
    mini_batch_size: "2"
    resources: {{max_concurrency_per_instance: 1}}
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
      environment: {{python: {python}}}
"""


@dataclass
class Site:
    """The spool, its daemons and the two users of this module."""

    base: Path
    spool: Path
    a: User
    b: User
    python: str
    made: int = 0
    known: set[str] = field(default_factory=set)  # jobs a case already looked at
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def jobs(self) -> Path:
        return self.spool / "jobs"

    def start(
        self, role: list[str], extra_env: Mapping[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """A root daemon of the spool (``leader`` or ``agent ...``), logging to daemons.log,
        with ``extra_env`` added to its environment."""
        env = dict(
            os.environ, PRSD_GPU_COUNT="0", PRSD_UNSAFE_SPOOL="1", PYTHONPATH=daemon_pythonpath()
        )
        env.update(extra_env or {})
        command = [*PRSD, *role, "--spool", str(self.spool), "--log-level", "INFO"]
        with open(self.base / "daemons.log", "ab") as log:
            proc = subprocess.Popen(command, env=env, stdout=log, stderr=log)
        self.procs.append(proc)
        return proc

    def job_folder(self, user: User, tag: str, pause_s: float = 0.0) -> Path:
        """A job folder of ``user``'s own (0700, theirs), rows tagged with ``tag``."""
        self.made += 1
        home = self.base / f"home-{user.name}"  # the user's own place (0700)
        if not home.exists():
            home.mkdir(mode=0o700)
            os.chown(home, user.uid, user.gid)
        folder = home / f"job{self.made}"
        (folder / "code").mkdir(parents=True)
        script = textwrap.dedent(SCRIPT).replace("{tag}", tag).replace("{pause}", str(pause_s))
        (folder / "code" / "score.py").write_text(script, encoding="utf-8")
        (folder / "data").mkdir()
        for i in range(4):
            (folder / "data" / f"item{i}.txt").write_text(f"{i}\n", encoding="utf-8")
        yaml = textwrap.dedent(YAML.format(name=tag, python=self.python))
        (folder / "job.yaml").write_text(yaml, encoding="utf-8")
        folder.chmod(0o700)
        chown_tree(folder, user)
        return folder

    def submit_as(self, user: User, tag: str, pause_s: float = 0.0) -> str:
        """``prsctl submit``'s code, run as ``user``; the id it printed."""
        folder = self.job_folder(user, tag, pause_s)
        spool = open_spool(self.spool, create=False)
        code, out = as_user(user, lambda: submit(folder, spool)[0])
        assert code == 0, out
        self.known.add(out)
        return out

    def drop_as(self, user: User, tag: str, name: str, plant: dict[str, str]) -> Path:
        """A hand-made folder renamed into ``inbox/<name>`` by ``user``, with ``plant``:
        name -> a symlink target (``->/path``) or file content."""
        folder = self.job_folder(user, tag)
        for entry, what in plant.items():
            if what.startswith("->"):
                (folder / entry).symlink_to(what[2:])
            else:
                (folder / entry).write_text(what, encoding="utf-8")
        chown_tree(folder, user)
        final = self.spool / "inbox" / name
        code, out = as_user(user, lambda: folder.rename(final))
        assert code == 0, out
        return final

    def final(self, job_id: str) -> dict[str, str]:
        try:
            return dict(json.loads(final_record(self.jobs / job_id / "state")))
        except (OSError, ValueError):
            return {}

    def wait_ended(self, job_id: str) -> dict[str, str]:
        try:
            wait_until(lambda: bool(self.final(job_id)), 120, f"the end of job {job_id}")
        except AssertionError as exc:  # the daemons' own account, for the failure report
            raise AssertionError(
                f"{exc}\n--- daemons.log (tail) ---\n{self.log()[-6000:]}"
            ) from None
        return self.final(job_id)

    def jobs_owned_by(self, user: User) -> set[str]:
        found = set()
        for job_id in job_ids(open_spool(self.spool, create=False)):
            try:
                record = json.loads((self.jobs / job_id / "owner.json").read_bytes())
            except (OSError, ValueError):
                continue
            if record.get("uid") == user.uid:
                found.add(job_id)
        return found

    def new_job_of(self, user: User) -> str:
        """Wait for a job of ``user`` no case has seen yet, and return its id."""
        wait_until(lambda: bool(self.jobs_owned_by(user) - self.known), 60, "a folder taken in")
        (job_id,) = self.jobs_owned_by(user) - self.known
        self.known.add(job_id)
        return job_id

    def log(self) -> str:
        return (self.base / "daemons.log").read_text(encoding="utf-8", errors="replace")


LATE_WRITERS = ("logs/perf", "logs/sys/node", "nodes")
"""Written by the agent when it lets go of an ended job (a last resource sample)."""


def tree(root: Path) -> dict[str, tuple[int, int, int, int]]:
    """Every path under ``root`` with its mode, owner, size and mtime (links not followed),
    but for the agent's late writes of an ended job."""
    seen = {}
    for folder, dirs, files in os.walk(root):
        for name in ["", *dirs, *files]:
            path = os.path.join(folder, name) if name else folder
            rel = os.path.relpath(path, root)
            if rel.startswith(LATE_WRITERS):
                continue
            info = os.lstat(path)
            seen[rel] = (
                info.st_mode,
                info.st_uid,
                info.st_size,
                info.st_mtime_ns,
            )
    return seen


def settled_tree(root: Path, quiet: float = 1.5, limit: float = 30.0) -> dict[str, Any]:
    """:func:`tree` of ``root`` once it stood still for ``quiet`` seconds: the leader's last
    writes of an ended job (its status summary, ``master_role.txt``) follow ``final.json``."""
    deadline = time.monotonic() + limit
    seen = tree(root)
    while True:
        time.sleep(quiet)
        now = tree(root)
        if now == seen:
            return now
        assert time.monotonic() < deadline, f"{root} kept changing for {limit} s"
        seen = now


def reader(path: Path) -> Callable[[], object]:
    """Read ``path`` (list it when it is a folder, as root sees it)."""
    if path.is_dir():
        return lambda: os.listdir(path)
    return path.read_bytes


def prsctl_as(user: User, site: Site, *argv: str) -> tuple[int, str]:
    """``prsctl ARGV`` as ``user``: its exit code and what it printed."""

    def call() -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = prsctl.main([*argv, "--spool", str(site.spool)])
        return f"{code}\n{out.getvalue()}"

    status, text = as_user(user, call)
    assert status == 0, text
    code, _, printed = text.partition("\n")
    return int(code), printed


def warm_up(site: Site) -> None:
    """Run submit and prsctl once as root on a scratch spool, so every module they
    import lazily is loaded before a child drops to a user who cannot read them."""
    scratch = site.base / "scratch-spool"
    folder = site.job_folder(site.a, "warm")
    job_id, _ = submit(folder, open_spool(scratch))
    with contextlib.redirect_stdout(io.StringIO()):
        for argv in (["status", "--json"], ["status"], ["logs", job_id]):
            prsctl.main([*argv, "--spool", str(scratch)])
        assert daemon.main(["run", str(folder), "--spool", str(scratch), "--node-id", "w"]) == 0


@contextlib.contextmanager
def running_site(
    users: list[User], prefix: str, env: Mapping[str, str] | None = None, *, leaders: int = 1
) -> Iterator[Site]:
    """A fresh spool (``inbox/`` 1777) with ``leaders`` root leaders and one root agent
    (``n1``, 2 slots) whose environment has ``env`` added; users A and B are the first
    two of ``users``. The daemons are stopped afterwards."""
    with open_base(prefix) as base, reachable_checkout():
        spool = base / "spool"
        open_spool(spool)
        (spool / "inbox").chmod(0o1777)
        s = Site(base, spool, users[0], users[1], python_for(users[0]))
        warm_up(s)
        try:
            for _ in range(leaders):
                s.start(["leader"], env)
            s.start(["agent", "--node-id", "n1", "--slots", "2"], env)
            yield s
        finally:
            stop_daemons(s.procs)


def exact_rows(site: Site, job_id: str, tag: str) -> None:
    """The job ended Completed with its four tagged rows, nothing else."""
    assert site.wait_ended(job_id)["state"] == "Completed", site.log()[-4000:]
    rows = (site.jobs / job_id / "outputs" / "out.txt").read_text().splitlines()
    assert sorted(rows) == [f"{tag} item{i}.txt" for i in range(4)]
