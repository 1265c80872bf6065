"""examples/sales_pipeline runs as its README says: ``prsd run pipeline.yml``, then check.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.pipekit import run_pipeline

EXAMPLE = Path(__file__).resolve().parent.parent.parent / "examples" / "sales_pipeline"


def test_sales_pipeline_example(tmp_path: Path) -> None:
    r = run_pipeline(EXAMPLE / "pipeline.yml", tmp_path / "spool", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.final()["state"] == "Completed"
    check = subprocess.run(
        [sys.executable, str(EXAMPLE / "check.py"), str(r.folder)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert check.returncode == 0, check.stderr
    assert check.stdout.startswith("sales-pipeline: 60 forecasts")
    assert not (EXAMPLE / "prepare" / "__pycache__").exists()  # read in place, run elsewhere
