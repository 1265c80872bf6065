"""Which submissions are pipelines: a ``type: pipeline`` file the single-job form cannot hold.

A pipeline of exactly one inline parallel step in a folder's ``job.yaml`` keeps
running as the job it always was; any other pipeline file (a file given by name,
several steps, a command step, a component file) runs as a pipeline. It loads no
pipeline code (``prsd.jobspec.steps`` and what it needs): a job's ``prsd run`` asks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prsd.jobspec.load import find_job_file
from prsd.jobspec.yamlsafe import read_yaml

if TYPE_CHECKING:
    from pathlib import Path


def is_pipeline(data: Any) -> bool:
    """True for a mapping whose ``type`` is ``pipeline``."""
    kind = data.get("type") if isinstance(data, dict) else None
    return isinstance(kind, str) and kind.strip().lower() == "pipeline"


def pipeline_file(target: Path) -> Path | None:
    """The pipeline file ``target`` names (a file, or a folder's job file), else None.

    Raises:
        JobSpecError: the file cannot be read as YAML, or the folder holds no job file.
    """
    by_name = target.is_file()
    path = target if by_name else find_job_file(target)
    data = read_yaml(path).data
    if not is_pipeline(data):
        return None
    if by_name:
        return path
    steps = data.get("jobs")
    if isinstance(steps, dict) and len(steps) == 1:
        (step,) = steps.values()
        if isinstance(step, dict) and step.get("type") == "parallel" and "component" not in step:
            return None
    return path
