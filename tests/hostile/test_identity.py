"""A job's identity is the leader's: two real users against real root daemons.

One root ``prsd leader`` and one root ``prsd agent`` serve every case of this module;
users A (the attacker) and B are created with useradd. Each case asserts that the
attack is refused with a reason, that nothing outside A's own job changed, and that
B's job completes untouched. Users act through :func:`tests.hostile.users.as_user`
(a forked child with the user's ids), so the kernel's own permission checks decide.
"""

from __future__ import annotations

import contextlib
import encodings.utf_8_sig
import io
import json
import os
import stat
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pytest

import prsd.cli.logfiles
import prsd.cli.logmerge
from prsd import daemon
from prsd.cli import prsctl
from prsd.cli.jobs import job_ids
from prsd.storage.spool import open_spool
from prsd.submit import submit
from tests.helpers import wait_until
from tests.hostile.users import (
    User,
    as_user,
    chown_tree,
    open_base,
    python_for,
    reachable_checkout,
    real_users,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

assert prsd.cli.logfiles and prsd.cli.logmerge  # imported before any fork (see users.py)
assert encodings.utf_8_sig  # job.yaml is read as utf-8-sig

PRSD = [sys.executable, "-m", "prsd.daemon"]

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

    def start(self, role: list[str]) -> subprocess.Popen[bytes]:
        """A root daemon of the spool (``leader`` or ``agent ...``), logging to daemons.log."""
        env = dict(os.environ, PRSD_GPU_COUNT="0", PRSD_UNSAFE_SPOOL="1")
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
            return dict(json.loads((self.jobs / job_id / "state" / "final.json").read_bytes()))
        except (OSError, ValueError):
            return {}

    def wait_ended(self, job_id: str) -> dict[str, str]:
        wait_until(lambda: bool(self.final(job_id)), 120, f"the end of job {job_id}")
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


def _reader(path: Path) -> Callable[[], object]:
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


def _warm_up(site: Site) -> None:
    """Run submit and prsctl once as root on a scratch spool, so every module they
    import lazily is loaded before a child drops to a user who cannot read them."""
    scratch = site.base / "scratch-spool"
    folder = site.job_folder(site.a, "warm")
    job_id, _ = submit(folder, open_spool(scratch))
    with contextlib.redirect_stdout(io.StringIO()):
        for argv in (["status", "--json"], ["status"], ["logs", job_id]):
            prsctl.main([*argv, "--spool", str(scratch)])
        assert daemon.main(["run", str(folder), "--spool", str(scratch), "--node-id", "w"]) == 0


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    """Root leader and agent on a fresh spool; users A and B; stopped and removed after."""
    with real_users(2) as (a, b), open_base("prsd-identity-") as base, reachable_checkout():
        spool = base / "spool"
        open_spool(spool)
        (spool / "inbox").chmod(0o1777)  # docs/deploy.md: anyone submits, sticky
        s = Site(base, spool, a, b, python_for(a))
        _warm_up(s)
        try:
            s.start(["leader"])
            s.start(["agent", "--node-id", "n1", "--slots", "2"])
            yield s
        finally:
            for proc in s.procs:
                proc.terminate()
            for proc in s.procs:
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def test_an_inbox_folder_named_after_another_users_job_gets_a_fresh_id(site: Site) -> None:
    """A's folder named after B's job id never re-opens B's job: it runs under a new id."""
    b_job = site.submit_as(site.b, "bee")
    assert site.wait_ended(b_job)["state"] == "Completed", site.log()
    before = tree(site.jobs / b_job)
    site.drop_as(site.a, "ant", b_job, {})
    a_job = site.new_job_of(site.a)
    assert a_job != b_job
    assert site.wait_ended(a_job)["state"] == "Completed", site.log()
    assert not (site.spool / "inbox" / b_job).exists()
    assert tree(site.jobs / b_job) == before, "B's job was not touched"
    rows = (site.jobs / a_job / "outputs" / "out.txt").read_text().split()
    assert rows.count("ant") == 4 and "bee" not in rows
    assert "inbox folder given a fresh job id" in site.log()


def test_planted_reserved_entries_are_moved_aside_never_written_through(site: Site) -> None:
    """Links at state/ and logs/, a forged spec.json and owner.json: refused with the reason,
    the links' target untouched, nothing run; B's job completes meanwhile."""
    target = site.base / "root-only"
    target.mkdir(mode=0o700)
    (target / "keep.txt").write_text("root's\n", encoding="utf-8")
    before = tree(target)
    forged_owner = json.dumps({"uid": 0, "gid": 0, "user": "root"})
    plant = {
        "state": f"->{target}",
        "logs": f"->{target}",
        "spec.json": '{"python": "/bin/sh"}',
        "owner.json": forged_owner,
    }
    site.drop_as(site.a, "planter", "planter", plant)
    b_job = site.submit_as(site.b, "bee2")
    a_job = site.new_job_of(site.a)
    final = site.wait_ended(a_job)
    assert final["state"] == "Failed"
    result = (site.jobs / a_job / "logs" / "job_result.txt").read_text()
    for name in ("logs", "owner.json", "spec.json", "state"):
        assert name in result
    assert "names prsd reserves" in result and ".planted-" in result
    assert tree(target) == before, "nothing was written through the planted links"
    job = site.jobs / a_job
    for name in ("state", "logs"):  # the daemons' own, fresh folders
        info = os.lstat(job / name)
        assert stat.S_ISDIR(info.st_mode) and info.st_uid == 0, name
    owner = json.loads((job / "owner.json").read_bytes())
    assert (owner["uid"], owner["gid"]) == (site.a.uid, site.a.gid), "the recorded owner is A"
    assert (job / "spec.json").exists() is False, "the forged spec was never taken as the spec"
    assert not list((job / "work").iterdir()), "no worker ran"
    (aside,) = job.glob(".planted-*")
    assert os.path.islink(aside / "state") and os.readlink(aside / "logs") == str(target)
    assert site.wait_ended(b_job)["state"] == "Completed", site.log()
    _, out = prsctl_as(site.a, site, "status", "--json")
    rows = {d["job_id"]: d for d in json.loads(out)["jobs"]}
    assert rows[a_job]["state"] == "Failed" and "reserves" in rows[a_job]["reason"]


def test_the_owner_cannot_rename_replace_or_plant_in_the_job_root(site: Site) -> None:
    """After intake, A's own job root is the daemons': state/ cannot be renamed, spec.json
    and owner.json cannot be rewritten or replaced, no link can be planted."""
    a_job = site.submit_as(site.a, "ant3")
    job = site.jobs / a_job
    wait_until(lambda: (job / "spec.json").exists(), 60, "A's job taken in")
    attacks = {
        "rename state/": lambda: (job / "state").rename(job / "state.old"),
        "rewrite spec.json": lambda: (job / "spec.json").write_text("{}"),
        "replace owner.json": lambda: os.unlink(job / "owner.json"),
        "plant a link": lambda: os.symlink("/etc", job / "nodes2"),
        "write in state/": lambda: (job / "state" / "final.json").write_text("{}"),
        "rename logs/": lambda: (job / "logs").rename(job / "logs.old"),
    }
    for what, attack in attacks.items():
        code, out = as_user(site.a, attack)
        assert code == 1 and "PermissionError" in out, f"{what}: {out}"
    assert site.wait_ended(a_job)["state"] == "Completed", site.log()
    rows = (job / "outputs" / "out.txt").read_text().split()
    assert rows.count("ant3") == 4


def test_a_new_leader_after_kill_9_resumes_the_job_as_its_recorded_owner(site: Site) -> None:
    """The leader is killed mid-job; the next one resumes from the daemons' own spec.json
    and the job still runs as A (its result files are A's), B's job beside it completes."""
    a_job = site.submit_as(site.a, "failover", pause_s=1.0)
    b_job = site.submit_as(site.b, "beside", pause_s=1.0)
    job = site.jobs / a_job
    wait_until(lambda: (job / "spec.json").exists(), 60, "A's job taken in")
    leader = site.procs[0]
    leader.kill()
    leader.wait(timeout=30)
    site.procs[0] = site.start(["leader", "--lease-s", "2", "--heartbeat-s", "0.3"])
    site.procs.pop()  # start() appended it; it replaces the killed one
    assert site.wait_ended(a_job)["state"] == "Completed", site.log()
    assert site.wait_ended(b_job)["state"] == "Completed", site.log()
    assert "takes the job over" in (job / "logs" / "sys" / "master_role.txt").read_text()
    assert (job / "outputs" / "out.txt").read_text().split().count("failover") == 4
    owner = json.loads((job / "owner.json").read_bytes())
    assert owner["uid"] == site.a.uid
    results = list(job.glob("results/*/*.res"))
    assert results and all(os.lstat(r).st_uid == site.a.uid for r in results)


def test_another_user_sees_the_status_row_but_none_of_the_files(site: Site) -> None:
    """B's code, outputs, logs, results and spec are closed to A; A's prsctl status shows
    B's row; B reads all of it, and prsctl logs works for B."""
    b_job = site.submit_as(site.b, "private")
    assert site.wait_ended(b_job)["state"] == "Completed", site.log()
    job = site.jobs / b_job
    private = [
        job / "outputs" / "out.txt",
        job / "logs" / "job_result.txt",
        job / "code" / "score.py",
        job / "job.yaml",
        job / "spec.json",
        next((job / "results").glob("*/*.res")),
        next((job / "work" / "n1").iterdir()),
    ]
    for path in private:
        code, out = as_user(site.a, _reader(path))
        assert code == 1 and "PermissionError" in out, f"A read {path}: {out}"
        code, out = as_user(site.b, _reader(path))
        assert code == 0, f"B cannot read its own {path}: {out}"
    code, out = as_user(site.a, lambda: os.listdir(job))
    assert code == 1 and "PermissionError" in out
    code, out = prsctl_as(site.a, site, "status", "--json")
    rows = {d["job_id"]: d for d in json.loads(out)["jobs"]}
    assert code == 0 and rows[b_job]["state"] == "Completed"
    code, out = prsctl_as(site.b, site, "logs", b_job)
    assert code == 0 and "Completed" in out


def test_a_symlink_or_file_in_the_inbox_is_removed_with_a_reason(site: Site) -> None:
    """Never Queued forever: the leader removes the link (its target untouched) and the file."""
    inbox = site.spool / "inbox"
    target = site.jobs  # a link to the daemons' own folder
    before = sorted(os.listdir(target))
    code, out = as_user(site.a, lambda: os.symlink(target, inbox / "linked-job"))
    assert code == 0, out
    code, out = as_user(site.a, lambda: (inbox / "filed-job").write_text("job.yaml\n"))
    assert code == 0, out
    wait_until(
        lambda: (
            not os.path.lexists(inbox / "linked-job") and not os.path.lexists(inbox / "filed-job")
        ),
        30,
        "the leader removed both",
    )
    assert sorted(os.listdir(target)) == before
    assert "linked-job" in site.log() and "a symlink" in site.log()
    code, out = prsctl_as(site.b, site, "status", "--json")
    ids = {d["job_id"] for d in json.loads(out)["jobs"]}
    assert not {"linked-job", "filed-job"} & ids


def test_prsd_run_as_an_ordinary_user_works_as_before(site: Site) -> None:
    """Without root nothing changes owner: A's own `prsd run` on A's own spool completes,
    its job root stays A's and owner.json names A."""
    folder = site.job_folder(site.a, "solo")
    spool = folder.parent / "own-spool"

    def run() -> int:
        with contextlib.redirect_stdout(io.StringIO()):
            return daemon.main(["run", str(folder), "--spool", str(spool), "--node-id", "solo"])

    code, out = as_user(site.a, run)
    assert (code, out) == (0, "0"), out
    (job,) = [j for j in (spool / "jobs").iterdir() if not j.name.startswith(".")]
    assert os.lstat(job).st_uid == site.a.uid
    assert json.loads((job / "owner.json").read_bytes())["uid"] == site.a.uid
    assert (job / "outputs" / "out.txt").read_text().split().count("solo") == 4


def test_prsctl_lists_no_phantom_job_for_a_link_in_the_inbox(tmp_path: Path) -> None:
    """Without any daemon: a link or a file in inbox/ is no Queued job; a folder is."""
    spool = open_spool(tmp_path / "spool")
    (tmp_path / "elsewhere").mkdir()
    (spool.inbox / "linked").symlink_to(tmp_path / "elsewhere")
    (spool.inbox / "filed").write_text("x")
    (spool.inbox / "real").mkdir()
    assert job_ids(spool) == ["real"]
