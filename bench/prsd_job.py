"""Building the prsd job folder for a workload: ``job.yaml`` and a copy of the entry scripts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

ENTRY_DIR = Path(__file__).resolve().parent / "entry"
OUTPUT_NAME = "out.txt"

JOB_YAML = """\
type: parallel
name: {name}
input_data: {input_path}
input_format: {input_format}
mini_batch_size: "{mini_batch_size}"
resources: {{max_concurrency_per_instance: {workers}}}
retry_settings: {{max_retries: 0, timeout: 600}}
task:
  code: ./code
  entry_script: {script}
  append_row_to: ./outputs/{output}
  environment_variables: {env}
"""


def job_yaml(
    *,
    name: str,
    input_path: str,
    input_format: str,
    mini_batch_size: str,
    workers: int,
    script: str,
    env: Mapping[str, str] | None = None,
) -> str:
    """The job spec every prsd runner submits (retries off: a failure must show).

    ``env``: variables the entry scripts read (prsd workers see the job's
    ``environment_variables``, never the runner's environment).
    """
    return JOB_YAML.format(
        name=name,
        input_path=input_path,
        input_format=input_format,
        mini_batch_size=mini_batch_size,
        workers=workers,
        script=script,
        output=OUTPUT_NAME,
        env=json.dumps(dict(env or {})),
    )


def make_job_folder(folder: Path, yaml_text: str) -> Path:
    """``folder/job.yaml`` and ``folder/code/`` (the entry scripts)."""
    folder.mkdir(parents=True)
    shutil.copytree(ENTRY_DIR, folder / "code", ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "job.yaml").write_text(yaml_text, encoding="utf-8")
    return folder


def job_output(spool: Path) -> Path | None:
    """The append_row file of the one job in ``spool``."""
    found = sorted(spool.glob(f"jobs/*/outputs/{OUTPUT_NAME}"))
    return found[0] if found else None
