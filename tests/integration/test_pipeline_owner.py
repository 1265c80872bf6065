"""A pipeline a real user submits to root daemons: every step runs as that user, and a
step reads the earlier step's output in the spool although it is a confined job."""

from __future__ import annotations

import encodings.utf_8_sig  # noqa: F401 - the user's child cannot import it (see realusers)
import os
import subprocess
import textwrap
from typing import TYPE_CHECKING

import pytest

from prsd.pipesubmit import submit_pipeline
from prsd.spool.opening import open_spool
from tests.helpers import stop_daemons, wait_until
from tests.realusers import (
    as_user,
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

    from tests.realusers import User

PRSD = [daemon_python(), "-m", "prsd.daemon"]

PIPELINE = """
type: pipeline
name: owned
jobs:
  make:
    type: command
    command: id -u > ${{outputs.o}}/maker.txt
    outputs: {o: {type: uri_folder}}
  score:
    type: parallel
    inputs: {d: {type: uri_folder, path: "${{parent.jobs.make.outputs.o}}"}}
    input_data: ${{inputs.d}}
    task:
      code: ./code
      entry_script: score.py
      append_row_to: ./outputs/out.txt
"""
SCORE = """
import os
def run(mini_batch):
    return [f"{open(p).read().strip()} read by {os.getuid()}" for p in mini_batch]
"""


@pytest.fixture
def user() -> Iterator[User]:
    with real_users(1) as (made,), reachable_checkout():
        yield made


def test_root_daemons_run_a_users_pipeline_as_the_user(user: User) -> None:
    with open_base("prsd-pipeline-owner-") as base:
        spool = base / "spool"
        open_spool(spool)
        env = dict(os.environ, PRSD_GPU_COUNT="0", PYTHONPATH=daemon_pythonpath())
        daemons: list[subprocess.Popen[bytes]] = []
        try:
            with open(base / "daemons.log", "wb") as log:
                for role in (["leader"], ["agent", "--node-id", "n1"]):
                    command = [*PRSD, *role, "--spool", str(spool)]
                    daemons.append(subprocess.Popen(command, env=env, stdout=log, stderr=log))
            wait_until((spool / "pipelines").is_dir, 30, "the leader to make pipelines/")
            folder = base / "p"
            (folder / "code").mkdir(parents=True)
            (folder / "pipeline.yml").write_text(PIPELINE)
            (folder / "code" / "score.py").write_text(textwrap.dedent(SCORE))
            chown_tree(folder, user)
            python = python_for(user)
            sets = [f"jobs.make.environment.python={python}"]
            sets.append(f"jobs.score.task.environment.python={python}")
            layout = open_spool(spool, create=False)
            code, pid = as_user(
                user,
                lambda: (
                    submit_pipeline(folder / "pipeline.yml", layout, overrides=sets).pipeline_id
                ),
            )
            assert code == 0, pid
            final = spool / "pipelines" / pid / "final.json"
            wait_until(final.exists, 120, "the pipeline's end")
            result = (spool / "pipelines" / pid / "logs" / "job_result.txt").read_text()
            assert result.startswith("Completed"), result + (base / "daemons.log").read_text()
            (out,) = spool.glob("jobs/owned-score-*/outputs/out.txt")
            assert out.read_text() == f"{user.uid} read by {user.uid}\n"
            (maker,) = spool.glob("jobs/owned-make-*/outputs/o/maker.txt")
            assert os.lstat(maker).st_uid == user.uid
        finally:
            stop_daemons(daemons)
