"""Workers start clean, and every process a worker starts dies with it.

Real ``prsd leader`` and ``prsd agent`` daemons run as root with variables of their
own (a secret, ``HOME=/root``); the job belongs to a real unprivileged user created
here. Its ``run()`` reports its environment and leaves a ``setsid`` + double-forked
``sleep 1000`` behind, once in a mini-batch that returns and once in one that the
agent kills for its timeout: neither sleep may outlive the job.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import textwrap
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import psutil
import pytest

from prsd.spool.opening import open_spool
from tests.helpers import stop_daemons, wait_until
from tests.realusers import (
    daemon_python,
    daemon_pythonpath,
    plain_user,
    python_for,
    reachable_checkout,
)

if TYPE_CHECKING:
    import pwd
    from collections.abc import Iterator

PRSD = [daemon_python(), "-m", "prsd.daemon"]

SCRIPT = """
    import json, os, subprocess, time

    def _leave_a_sleeper(name):
        # setsid + double fork: the sleep leaves the worker's session and process group.
        pid_file = os.path.join(os.environ["PIDS_DIR"], name + ".pid")
        subprocess.run(
            ["setsid", "sh", "-c", f"sleep 1000 & echo $! > {pid_file}.tmp; mv {pid_file}.tmp {pid_file}"],
            check=True,
        )
        while not os.path.exists(pid_file):
            time.sleep(0.01)

    def run(mini_batch):
        rows = []
        for path in mini_batch:
            name = os.path.basename(path)
            _leave_a_sleeper(name)
            if name.startswith("hang"):
                time.sleep(1000)
            rows.append(json.dumps(dict(os.environ), sort_keys=True))
        return rows
"""

YAML = """
    type: parallel
    name: sandboxed
    input_data: ./data
    mini_batch_size: "1"
    resources: {{max_concurrency_per_instance: 2}}
    retry_settings: {{max_retries: 0, timeout: 5}}
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
      environment: {{python: {python}}}
      environment_variables: {{PIDS_DIR: {pids}, OMP_NUM_THREADS: "1"}}
"""


@pytest.fixture
def user() -> Iterator[pwd.struct_passwd]:
    """A fresh unprivileged user, deleted afterwards."""
    with plain_user("prsds") as made:
        yield made


@pytest.fixture(name="reachable_checkout")
def _reachable_checkout() -> Iterator[None]:
    """Others may enter the folders above the checkout and list the checkout's."""
    with reachable_checkout():
        yield


def _drop_job(spool: Path, user: pwd.struct_passwd, pids: Path) -> None:
    staging = spool / "inbox" / ".sandboxed"
    (staging / "code").mkdir(parents=True)
    (staging / "code" / "score.py").write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
    (staging / "data").mkdir()
    for name in ("ok1.txt", "ok2.txt", "hang.txt"):
        (staging / "data" / name).write_text("x\n", encoding="utf-8")
    yaml = YAML.format(python=python_for(user), pids=pids)
    (staging / "job.yaml").write_text(textwrap.dedent(yaml), encoding="utf-8")
    for folder, dirs, files in os.walk(staging):
        for name in [*dirs, *files]:
            os.chown(os.path.join(folder, name), user.pw_uid, user.pw_gid)
    os.chown(staging, user.pw_uid, user.pw_gid)
    staging.rename(spool / "inbox" / "sandboxed")


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _check_environment(
    seen: dict[str, str], user: pwd.struct_passwd, pids: Path, job: Path
) -> None:
    assert "SECRET_ROOT_TOKEN" not in seen
    assert seen["HOME"] == "/" or seen["HOME"] == user.pw_dir
    assert seen["USER"] == seen["LOGNAME"] == user.pw_name
    assert seen["PATH"] == f"{Path(python_for(user)).parent}:/usr/local/bin:/usr/bin:/bin"
    assert seen["CUDA_CACHE_DISABLE"] == "1"
    assert seen["PIDS_DIR"] == str(pids) and seen["OMP_NUM_THREADS"] == "1"
    assert seen["PYTHONFAULTHANDLER"] == "1"
    assert seen["AZUREML_BI_OUTPUT_PATH"] == str(job / "outputs")
    allowed = {"PRSD_GPU_COUNT_FOUND", "AZ_BATCHAI_GPU_COUNT_FOUND", "PRSD_WORKER_TOKEN"}
    assert {k for k in seen if k.startswith("PRSD_")} <= allowed


@pytest.mark.usefixtures("reachable_checkout")
def test_workers_start_clean_and_their_processes_die_with_them(user: pwd.struct_passwd) -> None:
    """No agent variable reaches run(); setsid'd grandchildren die after a return and a timeout."""
    base = Path(tempfile.mkdtemp(prefix="prsd-sandbox-"))
    base.chmod(0o755)
    spool, pids = base / "spool", base / "pids"
    pids.mkdir()
    pids.chmod(0o777)
    open_spool(spool)
    env = dict(os.environ, PRSD_GPU_COUNT="0", SECRET_ROOT_TOKEN="x", HOME="/root")
    env["PYTHONPATH"] = daemon_pythonpath()
    env["CUDA_CACHE_DISABLE"] = "1"
    daemons: list[subprocess.Popen[bytes]] = []
    try:
        with open(base / "daemons.log", "wb") as log:
            for role in (["leader"], ["agent", "--node-id", "n1"]):
                command = [*PRSD, *role, "--spool", str(spool)]
                daemons.append(subprocess.Popen(command, env=env, stdout=log, stderr=log))
        _drop_job(spool, user, pids)
        jobs = spool / "jobs"
        wait_until(
            lambda: any((j / "state" / "final.json").exists() for j in jobs.iterdir()),
            120,
            "the job's end",
        )
        (job,) = [j for j in jobs.iterdir() if not j.name.startswith(".")]  # .ids: the registry
        logs = (base / "daemons.log").read_text()
        rows = (job / "outputs" / "out.txt").read_text(encoding="utf-8").splitlines()
        assert len(rows) == 2, logs
        for row in rows:
            _check_environment(json.loads(row), user, pids, job)
        report = (job / "logs" / "sys" / "job_report" / "processed_mini-batches.csv").read_text()
        assert ",timeout," in report, report
        sleepers = {p.stem: int(p.read_text()) for p in pids.glob("*.pid")}
        assert set(sleepers) == {"ok1.txt", "ok2.txt", "hang.txt"}
        for name, pid in sleepers.items():
            wait_until(partial(_gone, pid), 30, f"the sleep left by {name} to die")
        main_log = "".join(p.read_text() for p in job.glob("logs/sys/node/n1/_main.txt"))
        assert "worker cgroups: kill by cgroup" in main_log, main_log
    finally:
        stop_daemons(daemons)
        for pid_file in pids.glob("*.pid"):
            try:
                os.kill(int(pid_file.read_text()), 9)
            except (ProcessLookupError, ValueError):
                pass
        shutil.rmtree(base, ignore_errors=True)
