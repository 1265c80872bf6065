"""Writing pipeline files and running them with ``prsd run`` in tests (real processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

PRSD = [sys.executable, "-m", "prsd.daemon"]
PY = sys.executable


@dataclass
class PipelineRun:
    """What ``prsd run PIPELINE`` did: exit code, output, and the spool it used."""

    returncode: int
    stdout: str
    stderr: str
    spool: Path

    @property
    def pipeline_id(self) -> str:
        for line in self.stdout.splitlines():
            if line.startswith("pipeline "):
                return line.split()[1]
        return ""

    @property
    def folder(self) -> Path:
        return self.spool / "pipelines" / self.pipeline_id

    def step_job(self, step: str) -> Path:
        record = json.loads((self.folder / "pipeline.json").read_text())
        return self.spool / "jobs" / str(record["steps"][step]["job_id"])

    def result(self) -> str:
        return (self.folder / "logs" / "job_result.txt").read_text()

    def final(self) -> dict[str, Any]:
        return dict(json.loads((self.folder / "final.json").read_text()))


def write_files(root: Path, files: dict[str, str]) -> None:
    """Write ``files`` (relative name -> text, dedented) under ``root``."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))


def run_pipeline(
    target: Path, spool: Path, *args: str, timeout_s: float = 240, cwd: Path | None = None
) -> PipelineRun:
    """``prsd run TARGET --spool SPOOL ARGS``."""
    env = dict(os.environ)
    proc = subprocess.run(
        [*PRSD, "run", str(target), "--spool", str(spool), *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=env,
        check=False,
        cwd=cwd,
    )
    return PipelineRun(proc.returncode, proc.stdout, proc.stderr, spool)


def spool_entries(spool: Path) -> dict[str, list[str]]:
    """What a submission left in the spool's inbox, pipelines/ and jobs/."""
    out = {}
    for name in ("inbox", "pipelines", "jobs"):
        folder = spool / name
        out[name] = sorted(os.listdir(folder)) if folder.is_dir() else []
    return out
