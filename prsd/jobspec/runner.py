"""The job a pipeline's command step becomes: its runner script, and how to know one.

A command step's job runs prsd's command runner (:mod:`prsd.worker.command`) as its
entry script, ``runner/prsd_command.py`` in the step's folder
(:mod:`prsd.jobspec.stepjob` writes it); :func:`is_command_step` tells such a job by
that script, so the leader and the notes can speak of the command rather than of
mini-batches. Pure; imports nothing of prsd.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prsd.jobspec.model import JobSpec

RUNNER_FOLDER = "runner"
RUNNER_SCRIPT = "prsd_command.py"
RUNNER_TEXT = "from prsd.worker.command import init, run  # noqa: F401\n"


def is_command_step(spec: JobSpec) -> bool:
    """True for the job of a pipeline's command step (its entry script is the runner)."""
    return spec.entry_script == RUNNER_SCRIPT and Path(spec.code_dir).name == RUNNER_FOLDER
