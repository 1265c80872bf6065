"""A built environment run by the job's owner: a real user, root daemons, a real uv build.

The agent (root) builds the environment from the owner's conda file on an interpreter
the owner can run (one the owner cannot enter, such as one under /root, is skipped and
named in the build log), and the workers run on it as the owner.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING

import pytest

from prsd.storage.spool import open_spool
from tests.helpers import wait_until
from tests.realusers import (
    User,
    chown_tree,
    daemon_python,
    daemon_pythonpath,
    open_base,
    python_for,
    reachable_checkout,
    real_users,
)

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

PRSD = [daemon_python(), "-m", "prsd.daemon"]

SCRIPT = """
    import os, sys
    import pyfiglet

    def run(mini_batch):
        return [f"{os.getuid()} {sys.prefix} {pyfiglet.__version__}" for _ in mini_batch]
"""

YAML = """
    name: owned-env
    input_data: ./data
    mini_batch_size: "2"
    resources: {max_concurrency_per_instance: 1}
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
      environment: {conda_file: ./conda.yml}
"""

CONDA = "dependencies:\n  - python=3.11\n  - pip:\n    - pyfiglet==1.0.4\n"


@pytest.fixture
def user() -> Iterator[User]:
    with real_users(1) as (made,), reachable_checkout():
        yield made


def _drop_job(spool: Path, user: User) -> None:
    staging = spool / "inbox" / ".owned-env"
    (staging / "code").mkdir(parents=True)
    (staging / "code" / "score.py").write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
    (staging / "data").mkdir()
    for i in range(2):
        (staging / "data" / f"item{i}.txt").write_text(f"{i}\n", encoding="utf-8")
    (staging / "job.yaml").write_text(textwrap.dedent(YAML), encoding="utf-8")
    (staging / "conda.yml").write_text(CONDA, encoding="utf-8")
    chown_tree(staging, user)
    staging.rename(spool / "inbox" / "owned-env")


def test_owner_runs_the_environment_built_for_the_job(user: User) -> None:
    with open_base("prsd-envowner-") as base:
        spool, cache = base / "spool", base / "cache"
        open_spool(spool)
        env = dict(
            os.environ,
            PRSD_GPU_COUNT="0",
            PRSD_ENV_CACHE=str(cache),
            PRSD_ENV_PYTHONS=python_for(user),
            PYTHONPATH=daemon_pythonpath(),
        )
        daemons: list[subprocess.Popen[bytes]] = []
        try:
            with open(base / "daemons.log", "wb") as log:
                for role in (["leader"], ["agent", "--node-id", "n1"]):
                    command = [*PRSD, *role, "--spool", str(spool)]
                    daemons.append(subprocess.Popen(command, env=env, stdout=log, stderr=log))
            _drop_job(spool, user)
            jobs = spool / "jobs"
            wait_until(
                lambda: any((j / "state" / "final.json").exists() for j in jobs.iterdir()),
                180,
                "the job's end",
            )
            (job,) = [j for j in jobs.iterdir() if not j.name.startswith(".")]
            result = (job / "logs" / "job_result.txt").read_text(encoding="utf-8")
            build = (job / "logs" / "sys" / "environment" / "n1.txt").read_text(encoding="utf-8")
            assert result.startswith("Completed\n"), result + build
            rows = {
                line.split()[0:3:2] == [str(user.uid), "1.0.4"]
                for line in (job / "outputs" / "out.txt").read_text(encoding="utf-8").splitlines()
            }
            assert rows == {True}
            prefixes = {
                line.split()[1]
                for line in (job / "outputs" / "out.txt").read_text(encoding="utf-8").splitlines()
            }
            assert len(prefixes) == 1 and prefixes.pop().startswith(str(cache))
            real = os.path.realpath(sys.executable)
            if not real.startswith(os.path.realpath(python_for(user))):
                assert "skipped: the job's owner cannot run it" in build
        finally:
            for d in daemons:
                d.kill()
                d.wait(timeout=30)
