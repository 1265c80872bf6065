"""Per-job environments built from the job's own conda file, with real builds (uv, PyPI).

A job whose conda file pins ``python=3.11`` and lists a PyPI package installed nowhere
runs with no ``python`` key; a second job with the same file builds nothing; a bad
package, an impossible pin and an unknown registered name fail their jobs with the
resolver's first error line first while a healthy job on the same daemons completes;
two jobs at once build once, after a killed builder's lock is recovered.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from typing import TYPE_CHECKING

import pytest

from prsd.envs.interp import choose, find_interpreters
from prsd.envs.spec import parse_conda
from tests.fleet import Fleet
from tests.helpers import wait_until
from tests.jobkit import make_job, run_prsd

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

PACKAGE = "pyfiglet==1.0.4"

SCRIPT = """
    import sys
    import pyfiglet

    def run(mini_batch):
        return [f"{sys.prefix} {pyfiglet.__version__} {p}" for p in mini_batch]
"""

PLAIN = """
    def run(mini_batch):
        return list(mini_batch)
"""

YAML = """
    name: {name}
    input_data: ./data
    mini_batch_size: "2"
    resources: {{max_concurrency_per_instance: 1}}
    retry_settings: {{max_retries: 0, timeout: 60}}
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
      environment: {environment}
"""


def conda(*pip: str, python: str = "3.11") -> str:
    lines = "".join(f"      - {p}\n" for p in pip)
    return f"name: t\nchannels: [conda-forge]\ndependencies:\n  - python={python}\n  - pip\n  - pip:\n{lines}"


def env_job(
    root: Path, name: str, environment: str, files: dict[str, str], script: str = SCRIPT
) -> Path:
    job = make_job(root, script, YAML.format(name=name, environment=environment), files=4)
    for rel, text in files.items():
        (job / rel).write_text(text, encoding="utf-8")
    return job


def build_log(spool: Path, job_id: str) -> str:
    logs = (spool / "jobs" / job_id / "logs" / "sys" / "environment").glob("*.txt")
    return "".join(p.read_text(encoding="utf-8") for p in logs)


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    path = tmp_path / "envcache"
    path.mkdir(mode=0o755)
    return path


def test_conda_file_built_by_uv_then_reused(tmp_path: Path, cache: Path) -> None:
    """No python key: uv builds the conda file's environment; the same file again builds nothing."""
    assert importlib.util.find_spec("pyfiglet") is None, "the package must be installed nowhere"
    env = {"PRSD_ENV_CACHE": str(cache), "PRSD_CONTAINER_RUNTIME": "none"}
    job = env_job(
        tmp_path,
        "figlet",
        "{conda_file: ./conda.yml, image: mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu20.04}",
        {"conda.yml": conda(PACKAGE)},
    )
    spool = tmp_path / "spool"
    started = time.monotonic()
    first = run_prsd(job, spool, "--node-id", "n1", env=env)
    built_s = time.monotonic() - started
    assert first.returncode == 0, first.stdout + first.stderr
    assert (
        first.stderr.count("image 'mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu20.04' is not used")
        == 1
    )
    assert "no container runtime (podman or docker)" in first.stderr
    log = build_log(spool, first.job_id)
    assert "interpreter: " in log and "(3.11." in log
    assert " venv --relocatable" in log and f"+ {PACKAGE}" in log and " built in " in log
    rows = first.output("out.txt").read_text(encoding="utf-8").split()
    prefix = rows[0]
    assert prefix.startswith(str(cache)) and rows[1] == "1.0.4", rows
    assert "is not used" in first.main_logs()

    started = time.monotonic()
    second = run_prsd(job, spool, "--node-id", "n1", env=env)
    cached_s = time.monotonic() - started
    assert second.returncode == 0, second.stdout + second.stderr
    log = build_log(spool, second.job_id)
    assert "found in the cache; nothing built" in log
    assert " venv " not in log and "building environment" not in log
    assert second.output("out.txt").read_text(encoding="utf-8").split()[0] == prefix
    print(f"\nbench: prsd run with an environment build {built_s:.2f} s, cached {cached_s:.2f} s")

    (job / "conda.yml").write_text(conda("prsd-no-such-package-q7x==1.0"), encoding="utf-8")
    failed = run_prsd(job, spool, "--node-id", "n1", env=env)
    assert failed.returncode != 0
    reason = next(line for line in failed.stdout.splitlines() if line.startswith("Reason: "))
    assert reason.startswith(
        "Reason: error: No solution found when resolving dependencies: "
        "Because prsd-no-such-package-q7x was not found"
    ), failed.stdout

    (job / "conda.yml").write_text("dependencies: [python=3.11\n", encoding="utf-8")
    bad = run_prsd(job, spool, "--node-id", "n1", env=env)
    assert bad.returncode != 0 and not bad.stdout
    assert "task.environment.conda_file: ./conda.yml is not valid YAML (line 2)" in bad.stderr
    assert "Traceback" not in bad.stderr


@pytest.fixture
def fleet(tmp_path: Path, cache: Path) -> Iterator[Fleet]:
    f = Fleet(tmp_path / "spool", tmp_path / "daemon-logs", env={"PRSD_ENV_CACHE": str(cache)})
    yield f
    f.close()


def ctl(spool: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "prsd.cli.prsctl", *args, "--spool", str(spool)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.stdout + done.stderr


def test_bad_environments_fail_while_a_healthy_job_completes(tmp_path: Path, fleet: Fleet) -> None:
    """The resolver's first error line first in job_result.txt, job_error.txt and status."""
    fleet.leader()
    fleet.agent("n1", "--slots", "2")
    wait_until((fleet.spool / "jobs").is_dir, 30, "the spool to be made")
    (tmp_path / "figlet.conda.yml").write_text(conda(PACKAGE), encoding="utf-8")
    (tmp_path / "figlet.yml").write_text(
        "name: figlet\nimage: ubuntu:22.04\nconda_file: figlet.conda.yml\n"
    )
    said = ctl(fleet.spool, "env", "register", str(tmp_path / "figlet.yml"))
    assert said == "registered azureml:figlet:1\n", said
    assert "figlet\tversions 1\t(azureml:figlet@latest is 1)" in ctl(fleet.spool, "env", "list")
    jobs = {
        "nopkg": env_job(
            tmp_path / "a",
            "nopkg",
            "{conda_file: ./conda.yml}",
            {"conda.yml": conda("prsd-no-such-package-q7x==1.0")},
        ),
        "nopin": env_job(
            tmp_path / "b",
            "nopin",
            "{conda_file: ./conda.yml}",
            {"conda.yml": conda(PACKAGE, python="3.99")},
        ),
        "noname": env_job(tmp_path / "c", "noname", "azureml:prsd-missing@latest", {}),
        "registered": env_job(tmp_path / "e", "registered", "azureml:figlet@latest", {}),
        "healthy": env_job(
            tmp_path / "d",
            "healthy",
            "{requirements: ./requirements.txt}",
            {"requirements.txt": f"# python=3.11\n{PACKAGE}\n"},
        ),
    }
    ids = {name: fleet.submit(job) for name, job in jobs.items()}
    wait_until(lambda: all(fleet.final(i) for i in ids.values()), 240, "every job to end")
    firsts = {
        "nopkg": "error: No solution found when resolving dependencies: Because "
        "prsd-no-such-package-q7x was not found in the package registry",
        "nopin": "no interpreter for python=3.99 on this node (found: ",
        "noname": "unknown environment 'prsd-missing'; known: figlet (prsctl env list)",
    }
    for name, first in firsts.items():
        job_id = ids[name]
        logs = fleet.spool / "jobs" / job_id / "logs"
        result = (logs / "job_result.txt").read_text(encoding="utf-8").splitlines()
        assert result[0] == "Failed" and result[1].startswith(f"Reason: {first}"), result
        assert (logs / "job_error.txt").read_text(encoding="utf-8").startswith(first)
        assert first in ctl(fleet.spool, "status", job_id)
    unmet = build_log(fleet.spool, ids["nopin"])  # said at the build's start: nothing built
    assert "failed: no interpreter for python=3.99" in unmet
    assert "building environment" not in unmet and " venv " not in unmet, unmet
    for name in ("healthy", "registered"):
        final = fleet.final(ids[name])
        assert final is not None and final["state"] == "Completed", (name, final)
    built = build_log(fleet.spool, ids["healthy"]) + build_log(fleet.spool, ids["registered"])
    assert "environment from azureml:figlet@latest" in built
    main = fleet.spool / "jobs" / ids["registered"] / "logs" / "sys" / "node" / "n1" / "_main.txt"
    assert main.read_text(encoding="utf-8").count("image 'ubuntu:22.04' is not used") == 1
    assert built.count(" built in ") == 1, "the same needs, from two kinds of file: one build"
    assert fleet.alive("leader") and fleet.alive("n1")


def _shows_building(spool: Path, job_id: str) -> bool:
    return "building environment: waiting for another build (" in ctl(spool, "status", job_id)


def _key(conda_text: str) -> str:
    spec = parse_conda(conda_text)
    chosen, _ = choose(spec.python, find_interpreters())
    return spec.key(f"{chosen.path} {chosen.version}")


def test_two_jobs_build_once_after_a_killed_builder(
    tmp_path: Path, cache: Path, fleet: Fleet
) -> None:
    """A builder killed with its lock held and its folder half built: the jobs wait (status
    says building), then one builds and the other finds it built."""
    text = conda(PACKAGE, "six==1.16.0")
    key = _key(text)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import os, sys, time
            from pathlib import Path
            from prsd.envs.lock import FileLock
            FileLock(Path({str(cache / ".locks" / (key + ".build"))!r})).acquire()
            half = Path({str(cache)!r}) / f".build-{key}-{{os.getpid()}}"
            half.mkdir()
            (half / "half-built").write_text("x")
            print("held", flush=True)
            time.sleep(600)
        """),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    holder.stdout.close()
    fleet.leader()
    fleet.agent("n1", "--slots", "2")
    ids = [
        fleet.submit(env_job(tmp_path / n, n, "{conda_file: ./conda.yml}", {"conda.yml": text}))
        for n in ("one", "two")
    ]
    for job_id in ids:
        wait_until(
            functools.partial(_shows_building, fleet.spool, job_id),
            60,
            f"{job_id} to show its environment building",
        )
    assert not any(fleet.final(i) for i in ids)
    watched = tmp_path / "watch.txt"
    with watched.open("w") as out:
        watch = subprocess.Popen(
            [sys.executable, "-m", "prsd.cli.prsctl", "status", ids[0], "--watch", "--spool",
             str(fleet.spool)],
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    waiting = "; building environment: waiting for another build (0:00:"
    wait_until(lambda: waiting in watched.read_text(), 60, "--watch to stream the wait")
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=30)
    wait_until(lambda: all(fleet.final(i) for i in ids), 240, "both jobs to end")
    assert watch.wait(timeout=60) == 0, watched.read_text()
    streamed = [ln for ln in watched.read_text().splitlines() if "; building environment: " in ln]
    assert streamed[0].startswith("Running: ") and waiting in streamed[0], streamed
    for job_id in ids:
        final = fleet.final(job_id)
        assert final is not None and final["state"] == "Completed", final
    logs = [build_log(fleet.spool, i) for i in ids]
    assert all("waiting for another build of environment" in log for log in logs), logs
    assert sum(log.count(" built in ") for log in logs) == 1, logs
    assert sum(log.count("found in the cache; nothing built") for log in logs) == 1, logs
    assert not list(cache.glob(".build-*")), "the killed builder's folder was removed"
    report = json.loads((fleet.spool / "jobs" / ids[0] / "nodes" / "n1.json").read_text())
    assert report["environment"]["state"] == "ready"
