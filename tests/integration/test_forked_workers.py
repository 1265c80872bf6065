"""``prsd run``'s workers forked from the pre-imported fork server get what a spawned
worker gets: the same session, environment, working folder, umask, standard streams,
descriptors and cgroup. Each fact is reported by the worker itself and compared with
the same job's under ``prsd run --no-fork-server``. ``prsd agent`` forks its own user's
workers from a server of its own (``--no-fork-server``: spawned)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import psutil

from tests.fleet import Fleet
from tests.helpers import wait_until
from tests.jobkit import make_job, run_prsd
from tests.liverun import LiveRun

if TYPE_CHECKING:
    from pathlib import Path

REPORT = """
import json, os, sys

def init():
    me = os.getpid()
    fds = sorted(int(n) for n in os.listdir("/proc/self/fd"))
    report = {
        "pid": me,
        "ppid": os.getppid(),
        "session_leader": os.getsid(0) == me,
        "group_leader": os.getpgid(0) == me,
        "cwd": os.getcwd(),
        "umask": os.umask(0o022),
        "env": dict(os.environ),
        "stdin": os.readlink("/proc/self/fd/0"),
        "stdout": os.readlink("/proc/self/fd/1"),
        "stderr": os.readlink("/proc/self/fd/2"),
        "fd_count": len(fds),
        "cgroup": open("/proc/self/cgroup").read(),
        "own_cgroup": open("/proc/%d/cgroup" % os.getppid()).read(),
        "argv0": sys.argv[0],
        "prsd_loaded": sorted(m for m in sys.modules if m.startswith("prsd.")),
    }
    print("REPORT " + json.dumps(report), file=sys.stderr, flush=True)

def run(mini_batch):
    return [os.path.basename(p) for p in mini_batch]
"""

YAML = """
type: parallel
name: forked
input_data: ./data
mini_batch_size: "1"
resources: {{max_concurrency_per_instance: 1}}
output_action: append_row
append_row_file_name: out.txt
environment_variables: {env}
task:
  code: ./code
  entry_script: score.py
"""


def _report(tmp: Path, *args: str, env: str = "{}") -> tuple[dict[str, Any], str]:
    job = make_job(tmp, REPORT, YAML.format(env=env), files=2)
    result = run_prsd(job, tmp / "spool", *args, env={"PRSD_GPU_COUNT": "0", "RUNNER_SECRET": "x"})
    assert result.returncode == 0, result.stdout + result.stderr
    logs = result.spool / "jobs" / result.job_id / "logs" / "user" / "stderr"
    lines = [ln for p in logs.rglob("*.txt") for ln in p.read_text().splitlines()]
    found = [json.loads(ln[len("REPORT ") :]) for ln in lines if ln.startswith("REPORT ")]
    assert len(found) == 1, lines
    return found[0], result.job_id


def _shape(report: dict[str, Any], root: Path, job_id: str) -> dict[str, Any]:
    """The report's environment, folder and streams, its own folder and job id named alike."""
    env = dict(report["env"])
    assert env.pop("PRSD_WORKER_TOKEN")  # per worker (its cgroup's)
    text = json.dumps({"env": env, **{k: report[k] for k in ("cwd", "stdout", "stderr")}})
    shape: dict[str, Any] = json.loads(text.replace(str(root), "ROOT").replace(job_id, "JOB"))
    return shape


def test_a_forked_worker_gets_what_a_spawned_one_gets(tmp_path: Path) -> None:
    (tmp_path / "forked").mkdir()
    (tmp_path / "spawned").mkdir()
    forked, forked_job = _report(tmp_path / "forked")
    spawned, spawned_job = _report(tmp_path / "spawned", "--no-fork-server")
    # Forked: a child of the fork server, which is not prsd run itself.
    assert forked["prsd_loaded"] and spawned["prsd_loaded"]
    assert "prsd.worker.forkserver" in forked["prsd_loaded"]
    assert "prsd.worker.forkserver" not in spawned["prsd_loaded"]
    for report in (forked, spawned):
        assert report["session_leader"] and report["group_leader"]
        assert report["stdin"] == "/dev/null"
        assert "RUNNER_SECRET" not in report["env"]
    # The same environment (each job's own folder and cgroup token aside), folder, streams.
    assert _shape(forked, tmp_path / "forked", forked_job) == _shape(
        spawned, tmp_path / "spawned", spawned_job
    )
    assert forked["umask"] == spawned["umask"]
    assert forked["fd_count"] == spawned["fd_count"]

    # In a cgroup of its own (named by its token), as a spawned worker is.
    def cgroups(report: dict[str, Any]) -> str:
        return str(report["cgroup"]).replace(report["env"]["PRSD_WORKER_TOKEN"], "TOKEN")

    assert cgroups(forked) == cgroups(spawned)


def test_a_worker_with_its_own_interpreter_variables_is_spawned(tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    report, _ = _report(tmp_path, env=json.dumps({"PYTHONPATH": str(extra)}))
    assert "prsd.worker.forkserver" not in report["prsd_loaded"]
    assert report["env"]["PYTHONPATH"] == str(extra)


SLOW = """
import os, time

def run(mini_batch):
    time.sleep(0.5)
    return [os.path.basename(p) for p in mini_batch]
"""


def test_a_killed_fork_server_takes_its_workers_and_the_job_goes_on(tmp_path: Path) -> None:
    job = make_job(tmp_path, SLOW, YAML.format(env="{}"), files=6)
    run = LiveRun(job, tmp_path / "spool")
    try:
        job_id = run.job_id
        server: list[psutil.Process] = []

        def forked_worker() -> bool:
            server[:] = [
                p
                for p in psutil.Process(run.proc.pid).children()
                if "--fork-server" in " ".join(p.cmdline())
            ]
            return bool(server) and bool(server[0].children())

        wait_until(forked_worker, 60, "a worker forked by the fork server")
        worker = server[0].children()[0]
        server[0].kill()
        wait_until(lambda: not worker.is_running() or worker.status() == "zombie", 30, "the worker")
        code = run.wait(120)
    finally:
        run.kill()
    assert code == 0, run.text + run.stderr()
    out = tmp_path / "spool" / "jobs" / job_id / "outputs" / "out.txt"
    assert sorted(out.read_text().split()) == [f"item{i:05d}.txt" for i in range(6)]
    sys_log = "\n".join(
        p.read_text() for p in (tmp_path / "spool" / "jobs" / job_id / "logs").rglob("*.txt")
    )
    assert "SIGKILL" in sys_log, sys_log[-3000:]


def _daemon_report(tmp: Path, *agent_args: str) -> dict[str, Any]:
    """The REPORT of the one worker of a job run by a ``prsd agent`` daemon."""
    fleet = Fleet(tmp / "spool", tmp / "daemon-logs", env={"PRSD_GPU_COUNT": "0"})
    try:
        fleet.leader()
        fleet.agent("daemon-node", *agent_args)
        job_id = fleet.submit(make_job(tmp, REPORT, YAML.format(env="{}"), files=2))
        wait_until(lambda: fleet.final(job_id) is not None, 120, "the job's end")
        assert (fleet.final(job_id) or {}).get("state") == "Completed", fleet.final(job_id)
        agent = psutil.Process(fleet.procs["daemon-node"].pid)
        servers = [p for p in agent.children() if "--fork-server" in " ".join(p.cmdline())]
    finally:
        fleet.close()
    logs = tmp / "spool" / "jobs" / job_id / "logs" / "user" / "stderr"
    lines = [ln for p in logs.rglob("*.txt") for ln in p.read_text().splitlines()]
    found = [json.loads(ln[len("REPORT ") :]) for ln in lines if ln.startswith("REPORT ")]
    assert len(found) == 1, lines
    return {**found[0], "servers": [p.pid for p in servers]}


def test_the_agent_daemon_forks_its_own_users_workers_from_a_warm_server(tmp_path: Path) -> None:
    (tmp_path / "warm").mkdir()
    (tmp_path / "cold").mkdir()
    warm = _daemon_report(tmp_path / "warm")
    assert len(warm["servers"]) == 1  # started with the agent, kept after the job
    assert "prsd.worker.forkserver" in warm["prsd_loaded"]
    assert warm["ppid"] == warm["servers"][0]
    cold = _daemon_report(tmp_path / "cold", "--no-fork-server")
    assert not cold["servers"]
    assert "prsd.worker.forkserver" not in cold["prsd_loaded"]
    for report in (warm, cold):
        assert report["session_leader"] and report["stdin"] == "/dev/null"
