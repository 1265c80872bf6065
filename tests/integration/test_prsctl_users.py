"""``prsctl`` as two real unprivileged users against root daemons, as docs/deploy.md deploys it.

Two users are created with useradd (CI runs as root); real ``prsd leader`` and ``prsd
agent`` daemons run as root with the settings of ``systemd/prsd.env.example`` (its
allowed roots included); the spool's ``inbox/`` is 1777 as the guide makes it. Each
user runs the guide's first job from their home folder with a ``prsctl`` they may
execute, then acts on their own jobs and is refused, in one line naming the owner, on
the other's.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from prsd.settings import parse_env_text
from prsd.spool.opening import open_spool
from prsd.spool.statusfiles import merged_with_private_file
from tests.helpers import stop_daemons, wait_until
from tests.realusers import daemon_python, daemon_pythonpath, reachable_checkout

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parents[2]
PRSD = [daemon_python(), "-m", "prsd.daemon"]
RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"

QUICK = """
    import os
    def run(mini_batch):
        return [os.path.basename(p) for p in mini_batch]
"""

SLOW = """
    import time
    def run(mini_batch):
        time.sleep(120)
        return list(mini_batch)
"""

YAML = """
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


@dataclass(frozen=True)
class Fleet:
    base: Path
    spool: Path
    env_file: Path
    bin: Path
    users: tuple[pwd.struct_passwd, pwd.struct_passwd]
    admin: pwd.struct_passwd  # a member of PRSD_ADMIN_GROUP
    python: str


def _python_for(user: str) -> str:
    """An interpreter this user may run (the test's own may live under /root)."""
    for candidate in (os.path.realpath(sys.executable), "/usr/bin/python3"):
        probe = subprocess.run(
            ["runuser", "-u", user, "--", candidate, "-c", "import sys; assert sys.version_info >= (3, 11)"],
            stderr=subprocess.DEVNULL,
            check=False,
        )  # fmt: skip
        if probe.returncode == 0:
            return candidate
    raise AssertionError(f"no Python 3.11 interpreter is usable by {user}")


def _open_the_way(changed: list[tuple[Path, int]]) -> None:
    """Others must enter every folder above the checkout and read the checkout's packages
    (a ``mktemp -d`` clone is 0700): they get those rights, and their modes back after.
    Called inside :func:`tests.realusers.reachable_checkout`, which opens (and keeps
    open while any test needs it) the checkout's own way, so only folders it does not
    cover (the installed packages') are changed here."""
    packages = Path(sysconfig.get_paths()["purelib"])
    for target in (ROOT / "prsd" / "worker", packages):
        for folder in reversed([target, *target.parents]):
            mode = folder.stat().st_mode
            need = stat.S_IXOTH | (stat.S_IROTH if folder.is_relative_to(ROOT) else 0)
            if mode & need != need and all(folder != f for f, _ in changed):
                changed.append((folder, mode))
                folder.chmod(stat.S_IMODE(mode) | need)


def _make_user(suffix: str, *groups: str) -> pwd.struct_passwd:
    name = f"prsdc{suffix}"
    extra = ["-G", ",".join(groups)] if groups else []
    subprocess.run(["useradd", "-m", "-s", "/bin/bash", *extra, name], check=True)
    return pwd.getpwnam(name)


def _daemon_env(env_file: Path) -> dict[str, str]:
    """The daemons' environment as systemd builds it from EnvironmentFile=."""
    values = parse_env_text(env_file.read_text(encoding="utf-8"))
    env = dict(os.environ, **{k: v for k, v in values.items() if v})
    env["PRSD_GPU_COUNT"] = "0"
    env["PYTHONPATH"] = daemon_pythonpath()
    return env


@pytest.fixture(scope="module")
def fleet() -> Iterator[Fleet]:
    """Root daemons on a spool set up as the guide says, and two users with home folders."""
    assert os.geteuid() == 0, "this test needs root (CI runs as root)"
    suffix = secrets.token_hex(3)
    base = Path(tempfile.mkdtemp(prefix="prsd-users-"))  # /tmp/pytest-of-root is 0700
    base.chmod(0o755)
    changed: list[tuple[Path, int]] = []
    users: list[pwd.struct_passwd] = []
    daemons: list[subprocess.Popen[bytes]] = []
    admins = f"prsdadm{suffix}"
    subprocess.run(["groupadd", admins], check=True)
    # The checkout's way is opened by the one holder record every test shares (a test
    # ending elsewhere never closes it under this one); the packages' way here.
    shared = ExitStack()
    shared.enter_context(reachable_checkout())
    try:
        _open_the_way(changed)
        users = [
            _make_user(f"{suffix}a"),
            _make_user(f"{suffix}b"),
            _make_user(f"{suffix}c", admins),
        ]
        spool = base / "spool"
        open_spool(spool)
        (spool / "inbox").chmod(0o1777)
        example = (ROOT / "systemd" / "prsd.env.example").read_text(encoding="utf-8")
        env_file = base / "prsd.env"
        settings = example.replace("/mnt/prsd/spool", str(spool))
        settings = settings.replace("\nPRSD_ADMIN_GROUP=\n", f"\nPRSD_ADMIN_GROUP={admins}\n")
        assert admins in settings
        env_file.write_text(settings, encoding="utf-8")
        python = _python_for(users[0].pw_name)
        bindir = base / "bin"
        bindir.mkdir(mode=0o755)
        path = f"{ROOT}:{sysconfig.get_paths()['purelib']}"
        (bindir / "prsctl").write_text(
            f'#!/bin/sh\nPYTHONPATH={path} PRSD_ENV_FILE={env_file} exec {python} -m prsd.cli.prsctl "$@"\n',
            encoding="utf-8",
        )  # fmt: skip
        (bindir / "prsctl").chmod(0o755)
        env = _daemon_env(env_file)
        with open(base / "daemons.log", "wb") as log:
            for role in (["leader"], ["agent", "--node-id", "n1", "--slots", "4"]):
                command = [*PRSD, *role, "--spool", str(spool)]
                daemons.append(subprocess.Popen(command, env=env, stdout=log, stderr=log))
        yield Fleet(base, spool, env_file, bindir, (users[0], users[1]), users[2], python)
    finally:
        stop_daemons(daemons)
        for user in users:
            subprocess.run(["userdel", "-r", user.pw_name], check=False, capture_output=True)
        subprocess.run(["groupdel", admins], check=False, capture_output=True)
        for folder, mode in reversed(changed):
            folder.chmod(stat.S_IMODE(mode))
        shared.close()
        shutil.rmtree(base, ignore_errors=True)


def as_user(
    fleet: Fleet, user: pwd.struct_passwd, script: str, timeout_s: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run a shell script as ``user`` in their home folder, with prsctl on the PATH."""
    return subprocess.run(
        [RUNUSER, "-u", user.pw_name, "--", "bash", "-c", f"cd ~ && {script}"],
        env={"PATH": f"{fleet.bin}:/usr/bin:/bin", "HOME": user.pw_dir, "LANG": "C.UTF-8"},
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def make_home_job(fleet: Fleet, user: pwd.struct_passwd, folder: str, script: str) -> Path:
    """``~/<folder>``: a job folder with code and four input files, owned by ``user``."""
    job = Path(user.pw_dir) / folder
    (job / "code").mkdir(parents=True)
    (job / "code" / "score.py").write_text(textwrap.dedent(script), encoding="utf-8")
    (job / "data").mkdir()
    for i in range(4):
        (job / "data" / f"item{i}.txt").write_text(f"{i}\n", encoding="utf-8")
    yaml = YAML.format(name=folder, python=fleet.python)
    (job / "job.yaml").write_text(textwrap.dedent(yaml), encoding="utf-8")
    for path in [job, *job.rglob("*")]:
        os.chown(path, user.pw_uid, user.pw_gid)
    return job


def submit(fleet: Fleet, user: pwd.struct_passwd, folder: str) -> str:
    r = as_user(fleet, user, f"cd ~/{folder} && prsctl submit .")
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def state(fleet: Fleet, job_id: str) -> str:
    try:
        doc = json.loads((fleet.spool / "jobs" / job_id / "state" / "status.json").read_bytes())
    except (FileNotFoundError, ValueError):
        return "Queued"
    return str(doc["state"])


def one_line_refusal(r: subprocess.CompletedProcess[str], *words: str) -> None:
    """Exit code 2, nothing on stdout, one line on stderr holding ``words``, no traceback."""
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_deploy_guide_first_job_and_own_jobs_only(fleet: Fleet) -> None:
    """The guide's walk-through as each user; status, logs, report of one's own job, not the other's."""
    alice, bob = fleet.users
    ids = {}
    for user in (alice, bob):
        make_home_job(fleet, user, "my-job", QUICK)
        r = as_user(
            fleet,
            user,
            f"cd ~/my-job && export PRSD_SPOOL={fleet.spool} && "
            "id=$(prsctl submit .) && echo $id && prsctl status $id",
        )
        assert r.returncode == 0, r.stdout + r.stderr
        ids[user.pw_name] = r.stdout.splitlines()[0]
    for user in (alice, bob):
        job_id = ids[user.pw_name]
        wait_until(lambda j=job_id: state(fleet, j) == "Completed", 120, f"{job_id} completed")  # type: ignore[misc]
        r = as_user(fleet, user, f"cat {fleet.spool}/jobs/{job_id}/logs/job_result.txt")
        assert r.returncode == 0 and r.stdout.startswith("Completed"), r.stdout + r.stderr
        for command in (
            "status",
            f"status {job_id}",
            f"logs {job_id}",
            f"report {job_id} -o ~/r.html",
        ):
            r = as_user(fleet, user, f"prsctl {command}")
            assert r.returncode == 0 and "Traceback" not in r.stderr, (command, r.stderr)
    for reader, owner in ((bob, alice), (alice, bob)):
        job_id = ids[owner.pw_name]
        listed = as_user(fleet, reader, "prsctl status --json")
        assert job_id in listed.stdout  # the jobs table lists every job for everyone
        for command in (
            f"status {job_id}",
            f"logs {job_id}",
            f"report {job_id}",
            f"retry {job_id}",
        ):
            r = as_user(fleet, reader, f"prsctl {command}")
            one_line_refusal(r, f"job {job_id} belongs to {owner.pw_name} (uid {owner.pw_uid})",
                             f"{reader.pw_name} (uid {reader.pw_uid}) may not")  # fmt: skip
    for command in (f"logs {ids[alice.pw_name]}", "status --json", "status"):
        r = as_user(fleet, alice, f"prsctl {command} 2>~/err.txt | true; cat ~/err.txt")
        assert r.stdout == "", r.stdout  # a closed pipe: no BrokenPipeError, not even at exit
    job = fleet.spool / "jobs" / ids[alice.pw_name]
    (job / "logs" / "sys" / "master_role.txt").chmod(0o600)  # the daemons' own: root only
    (job / "state" / "status.json").chmod(0o600)
    r = as_user(fleet, alice, f"prsctl logs {ids[alice.pw_name]}")
    assert r.returncode == 0 and "[result] Completed" in r.stdout, r.stdout + r.stderr
    (line,) = r.stderr.splitlines()
    assert f"master_role.txt: not readable by {alice.pw_name} (uid {alice.pw_uid})" in line
    r = as_user(fleet, bob, "prsctl status --json")
    assert r.returncode == 0, r.stderr
    (doc,) = [d for d in json.loads(r.stdout)["jobs"] if d["job_id"] == ids[alice.pw_name]]
    assert doc["state"] == "Unknown" and "status.json is not readable" in doc["reason"]


def test_cancel_own_job_only_recorded_by_name(fleet: Fleet) -> None:
    """bob's cancel of alice's job is refused naming alice; alice's own is done and recorded."""
    alice, bob = fleet.users
    make_home_job(fleet, alice, "slow-a", SLOW)
    make_home_job(fleet, bob, "slow-b", SLOW)
    slow_a, slow_b = submit(fleet, alice, "slow-a"), submit(fleet, bob, "slow-b")
    wait_until(lambda: state(fleet, slow_a) == "Running", 60, "alice's job running")
    r = as_user(fleet, bob, f"prsctl cancel {slow_a}")
    one_line_refusal(r, f"job {slow_a} belongs to {alice.pw_name} (uid {alice.pw_uid})",
                     f"{bob.pw_name} (uid {bob.pw_uid}) may not cancel it", f"ask {alice.pw_name}")  # fmt: skip
    r = as_user(fleet, bob, f"prsctl cancel {slow_b}")
    assert r.returncode == 0 and f"Canceled by {bob.pw_name} (uid {bob.pw_uid})" in r.stdout, r
    assert state(fleet, slow_a) == "Running"  # bob's refused request changed nothing
    r = as_user(fleet, alice, f"prsctl cancel {slow_a}")
    assert r.returncode == 0, r.stderr
    who = f"{alice.pw_name} (uid {alice.pw_uid})"
    assert r.stdout.strip() == f"job {slow_a}: Canceled by {who}"
    wait_until(lambda: state(fleet, slow_a) == "Canceled", 30, "alice's job canceled")
    logs = fleet.spool / "jobs" / slow_a / "logs"
    assert (logs / "job_result.txt").read_text(encoding="utf-8").startswith("Canceled")
    assert f"Canceled by {who}." in (logs / "job_result.txt").read_text(encoding="utf-8")
    master = (logs / "sys" / "master_role.txt").read_text(encoding="utf-8")
    assert f"cancel requested by {who}" in master
    assert f"refused: cancel asked by {bob.pw_name}" in master
    state_dir = fleet.spool / "jobs" / slow_a / "state"
    doc = merged_with_private_file(json.loads((state_dir / "status.json").read_bytes()), state_dir)
    assert doc["reason"] == f"Canceled by {who}."
    r = as_user(fleet, alice, f"prsctl status {slow_a}")
    assert r.returncode == 0 and f"Canceled by {who}" in r.stdout, r.stdout + r.stderr
    r = as_user(fleet, alice, f"prsctl retry {slow_a}")  # the owner re-runs the canceled job
    assert r.returncode == 0, r.stderr
    again = r.stdout.strip()
    r = as_user(fleet, bob, f"prsctl cancel {again}")
    one_line_refusal(r, f"job {again} belongs to {alice.pw_name} (uid {alice.pw_uid})")
    r = as_user(fleet, alice, f"prsctl cancel {again}")
    assert r.returncode == 0 and f"Canceled by {who}" in r.stdout, r.stdout + r.stderr


def test_forged_requests_are_answered_and_the_daemons_serve_on(fleet: Fleet) -> None:
    """A symlinked or lying request file is refused with its reason; a healthy job completes meanwhile."""
    alice, bob = fleet.users
    requests = fleet.spool / "requests"
    forged = {
        "link": f"job-x.cancel.{secrets.token_hex(8)}",
        "body": f"job-y.cancel.{secrets.token_hex(8)}",
    }
    r = as_user(
        fleet,
        bob,
        f"ln -s /etc/shadow {requests}/{forged['link']} && "
        f'echo \'{{"job_id": "other", "action": "cancel"}}\' > {requests}/{forged["body"]}',
    )
    assert r.returncode == 0, r.stderr
    make_home_job(fleet, alice, "healthy", QUICK)
    healthy = submit(fleet, alice, "healthy")
    for name, why in (("link", "cannot open"), ("body", "does not name the job")):
        reply = requests / (forged[name] + ".reply")
        wait_until(reply.exists, 30, f"the answer to the forged {name} request")
        answer = json.loads(reply.read_bytes())
        assert answer["ok"] is False and why in answer["message"], answer
        assert not (requests / forged[name]).exists()
    wait_until(lambda: state(fleet, healthy) == "Completed", 120, "the healthy job completed")


def test_permission_problems_are_one_line(fleet: Fleet) -> None:
    """A closed requests/ folder, an unwritable report path, a folder outside the allowed
    roots: one line each; an admin-group member cancels another user's job."""
    alice, _ = fleet.users
    make_home_job(fleet, alice, "slow-c", SLOW)
    slow_c = submit(fleet, alice, "slow-c")
    requests = fleet.spool / "requests"
    requests.chmod(0o755)
    try:
        r = as_user(fleet, alice, f"prsctl cancel {slow_c}")
    finally:
        requests.chmod(0o1777)
    one_line_refusal(
        r, f"{requests}", "permission denied for", alice.pw_name, f"chmod 1777 {requests}"
    )
    carol = fleet.admin  # in PRSD_ADMIN_GROUP: may look into and cancel alice's job
    r = as_user(fleet, carol, f"prsctl logs {slow_c} && prsctl cancel {slow_c}")
    assert r.returncode == 0, r.stderr
    assert f"Canceled by {carol.pw_name} (uid {carol.pw_uid})" in r.stdout, r.stdout
    r = as_user(fleet, alice, f"prsctl report {slow_c} -o /root/report.html")
    one_line_refusal(r, "/root: permission denied for", alice.pw_name, "use a path")
    outside = fleet.base / "outside-job"
    make_home_job(fleet, alice, "away", QUICK)
    shutil.copytree(Path(alice.pw_dir) / "away", outside)
    for path in [outside, *outside.rglob("*")]:
        os.chown(path, alice.pw_uid, alice.pw_gid)
    r = as_user(fleet, alice, f"cd {outside} && prsctl submit .")
    one_line_refusal(r, f"{outside} is outside the allowed roots",
                     f"PRSD_ALLOWED_ROOTS in {fleet.env_file}")  # fmt: skip
    far = make_home_job(fleet, alice, "far-data", QUICK)  # the folder is fine, its input is not
    spec = (far / "job.yaml").read_text(encoding="utf-8")
    (far / "job.yaml").write_text(spec.replace("./data", str(outside / "data")), encoding="utf-8")
    r = as_user(fleet, alice, "cd ~/far-data && prsctl submit .")
    one_line_refusal(r, f"{outside / 'data'} is outside the allowed roots", "input_data",
                     f"PRSD_ALLOWED_ROOTS in {fleet.env_file}")  # fmt: skip


def test_another_users_folder_is_refused_before_the_id(fleet: Fleet) -> None:
    """alice submits a job folder of bob's that she may read: the leader would refuse it
    (a job run for its owner uses no other user's home), so prsctl refuses it with the
    leader's message before any id, and nothing is queued."""
    alice, bob = fleet.users
    job = make_home_job(fleet, bob, "lent-job", QUICK)
    spec = (job / "job.yaml").read_text(encoding="utf-8")  # no output into bob's folder
    (job / "job.yaml").write_text(spec.replace("append_row_to", "#"), encoding="utf-8")
    home = Path(bob.pw_dir)
    mode = home.stat().st_mode
    inbox = os.listdir(fleet.spool / "inbox")
    home.chmod(0o755)
    try:
        for path in [job, *job.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        r = as_user(fleet, alice, f"prsctl submit {job}")
    finally:
        home.chmod(stat.S_IMODE(mode))
    one_line_refusal(r, f"job_dir: {job} is in {os.path.realpath(home)}", "another user's home")
    assert set(os.listdir(fleet.spool / "inbox")) <= set(inbox)  # nothing new queued
