"""``python -m bench.planstart``: the plan through the planner process, both trees run.

The same tree stands in for "before"; 300 files. No timing is asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_both_trees_plan_the_whole_input_and_the_medians_are_printed() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bench.planstart", "--before", str(REPO)]
        + ["--files", "300", "--repeats", "2"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith("#")]
    assert len(rows) == 4 and all("'mini_batches': 3," in r for r in rows), proc.stdout
    assert "before: 2/2 ok, first mini-batch " in proc.stdout
    assert "after: 2/2 ok, first mini-batch " in proc.stdout
