"""``prsctl gc --older-than DAYS``: the leader removes ended jobs older than that; a
young one, a running one and another user's stay; admins may remove every job."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

# prsctl imports psutil lazily (the lease check of `prsd.read.fleet`); the users the tests
# act as cannot read this interpreter's library (under /root), so it is loaded before they fork
import psutil  # noqa: F401

from prsd.cli.prsctl import main as prsctl_main
from prsd.leader.requests.removal import remove_ended_job
from prsd.spool.layout import SpoolLayout
from prsd.spool.requests import Request, read_reply, send_request
from tests.helpers import stop_daemons, wait_until
from tests.jobkit import make_job, prsctl, run_prsd
from tests.realusers import as_user, daemon_python, daemon_pythonpath, open_base, real_users

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.spool.requests import Reply

ENV = {**os.environ, "PRSD_GPU_COUNT": "0"}

QUICK = """
    def run(mini_batch):
        return list(mini_batch)
"""

SLEEPY = """
    import time
    def run(mini_batch):
        time.sleep(600)
        return list(mini_batch)
"""


def _yaml(name: str) -> str:
    return f"""
        name: {name}
        input_data: ./data
        mini_batch_size: "1"
        resources: {{max_concurrency_per_instance: 1}}
        task:
          code: ./code
          entry_script: score.py
    """


def ctl(spool: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return prsctl(spool, *args, timeout_s=90, env=ENV)


def _ended_job(root: Path, spool: Path, name: str) -> str:
    job = make_job(root / name, QUICK, _yaml(name), files=2)
    r = run_prsd(job, spool, env=ENV)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.job_id


def _ended_days_ago(layout: SpoolLayout, job_id: str, days: float) -> None:
    """Move the job's recorded end ``days`` back (its public and private final records)."""
    when = (datetime.now(UTC) - timedelta(days=days)).isoformat(timespec="seconds")
    final = layout.job(job_id).final
    for path in (final, final.with_name("final.private.json")):
        if path.exists():
            doc = json.loads(path.read_bytes())
            doc["finished_at"] = when
            path.write_text(json.dumps(doc), encoding="utf-8")


def _daemons(spool: Path, log: Path, env: dict[str, str]) -> list[subprocess.Popen[bytes]]:
    # root daemons start owner-side processes with their interpreter, as the job's owner
    prsd = [daemon_python(), "-m", "prsd.daemon"]
    env = {**env, "PYTHONPATH": daemon_pythonpath()}
    with open(log, "ab") as out:
        return [
            subprocess.Popen(
                [*prsd, "leader", "--spool", str(spool)], stdout=out, stderr=out, env=env
            ),
            subprocess.Popen(  # a short drain: the sleepy job's worker is killed at the end
                [*prsd, "agent", "--spool", str(spool), "--node-id", "n1", "--drain-grace-s", "1"],
                stdout=out,
                stderr=out,
                env=env,
            ),
        ]


def _reply(layout: SpoolLayout, request: Request) -> Reply:
    found: list[Reply] = []

    def answered() -> bool:
        reply = read_reply(layout, request)
        found.extend([reply] if reply is not None else [])
        return bool(found)

    wait_until(answered, 60, "the leader's answer")
    return found[0]


def test_gc_removes_old_ended_jobs_and_keeps_young_and_running_ones(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    layout = SpoolLayout(spool)
    old = _ended_job(tmp_path, spool, "old")
    _ended_days_ago(layout, old, 2.0)  # as if two days had passed since "old" ended
    young = _ended_job(tmp_path, spool, "young")
    procs = _daemons(spool, tmp_path / "daemons.log", ENV)
    try:
        sleepy = make_job(tmp_path / "sleepy", SLEEPY, _yaml("sleepy"), files=1)
        running = ctl(spool, "submit", str(sleepy)).stdout.strip()
        wait_until(
            lambda: (
                json.loads(ctl(spool, "status", running, "--json").stdout)["state"] == "Running"
            ),
            60,
            "the sleepy job to run",
        )
        dry = ctl(spool, "gc", "--older-than", "1", "--dry-run")
        assert dry.returncode == 0, dry.stderr
        assert dry.stdout.startswith(f"would remove {old} (Completed, ended 2.0 days ago)"), (
            dry.stdout
        )
        assert len(dry.stdout.splitlines()) == 1
        assert (layout.jobs / old).is_dir()  # a dry run asks nothing
        gc = ctl(spool, "gc", "--older-than", "1")
        assert gc.returncode == 0, gc.stderr
        assert gc.stdout.startswith(f"job {old} removed (Completed, ended "), gc.stdout
        assert len(gc.stdout.splitlines()) == 1
        assert not (layout.jobs / old).exists()
        assert (layout.jobs / young).is_dir() and (layout.jobs / running).is_dir()
        wait_until(
            lambda: not [n for n in os.listdir(layout.jobs) if n.startswith(".removed-")],
            60,
            "the folder set aside to be deleted",
        )
        listed = [d["job_id"] for d in json.loads(ctl(spool, "status", "--json").stdout)["jobs"]]
        assert sorted(listed) == sorted([young, running])
        refused = _reply(layout, send_request(layout, running, "remove"))
        assert not refused.ok
        assert refused.message == f"job {running} is running: only ended jobs are removed"
        again = ctl(spool, "gc", "--older-than", "1")
        assert again.stdout == "nothing to remove: no ended job older than 1 days\n"
    finally:
        stop_daemons(procs)


def _prsctl_as(args: list[str], env: dict[str, str]) -> str:
    """prsctl in this (forked, unprivileged) process: its stdout and stderr, and code."""
    os.environ.update(env)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = prsctl_main(args)
    return json.dumps({"code": code, "out": out.getvalue(), "err": err.getvalue()})


def test_gc_of_another_users_job_is_refused_and_admins_may(tmp_path: Path) -> None:
    with open_base("prsd-gc-") as base, real_users(2) as (alice, admin):
        spool = base / "spool"
        layout = SpoolLayout(spool)
        mine = [_ended_job(tmp_path, spool, "rootjob"), _ended_job(tmp_path, spool, "rootjob2")]
        (spool / "inbox").chmod(0o1777)  # as on a deployed spool (docs/deploy.md)
        env = {**ENV, "PRSD_ADMIN_GROUP": admin.name}  # the admin's own group
        procs = _daemons(spool, tmp_path / "daemons.log", env)
        try:
            wait_until(lambda: (layout.leader / "heartbeat.json").exists(), 60, "the leader")
            gc = ["gc", "--older-than", "0", "--spool", str(spool)]
            code, text = as_user(alice, lambda: _prsctl_as(gc, env))
            assert code == 0, text
            said = json.loads(text)
            assert said["out"] == "nothing to remove: no ended job of yours older than 0 days\n", (
                said
            )
            assert "2 ended jobs of other users left" in said["err"], said
            code, text = as_user(
                alice, lambda: repr(_reply(layout, send_request(layout, mine[0], "remove")))
            )
            assert code == 0, text
            assert "ok=False" in text and f"job {mine[0]} belongs to root (uid 0)" in text, text
            assert f"{alice.name} (uid {alice.uid}) may not remove it" in text, text
            assert (layout.jobs / mine[0]).is_dir()
            code, text = as_user(admin, lambda: _prsctl_as(gc, env))
            assert code == 0, text
            said = json.loads(text)
            assert said["code"] == 0 and said["err"] == "", said
            assert sorted(line.split()[1] for line in said["out"].splitlines()) == sorted(mine)
            assert not any((layout.jobs / j).exists() for j in mine)
        finally:
            stop_daemons(procs)


BROKEN_ONE = """
    def run(mini_batch):
        for path in mini_batch:
            if path.endswith("item00001.txt"):
                raise ValueError("item 1 is broken")
        return list(mini_batch)
"""


FLAKY_YAML = """
    name: flaky
    input_data: ./data
    mini_batch_size: "1"
    resources: {max_concurrency_per_instance: 1}
    retry_settings: {max_retries: 0}
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
"""


def test_a_job_whose_results_a_waiting_retry_keeps_is_not_removed(tmp_path: Path) -> None:
    """The retry reads the earlier job's results at its end: gc leaves that job alone."""
    spool = tmp_path / "spool"
    job = make_job(tmp_path, BROKEN_ONE, FLAKY_YAML, files=3)
    first = run_prsd(job, spool, env=ENV)
    assert first.returncode == 0, first.stdout + first.stderr
    assert first.result_text().startswith("Completed with failures")
    retry = ctl(spool, "retry", first.job_id)
    assert retry.returncode == 0, retry.stderr
    waiting = retry.stdout.strip()
    assert (spool / "inbox" / waiting).is_dir()  # no leader: the retry waits
    removed, message = remove_ended_job(SpoolLayout(spool), first.job_id)
    assert not removed
    assert message == (
        f"job {first.job_id} is kept by job {waiting}, a retry that has not ended (it "
        f"reads {first.job_id}'s results at its end); remove it once {waiting} has ended"
    )
    assert (spool / "jobs" / first.job_id).is_dir()
