"""``bench/bigmachine.sh --quick``: the big-machine run's every step, at a tiny size, in
one call (W9 at N = 1, 2; W1-W4; the GPU part, which says in one line why it is skipped
on a machine without a GPU). No timing is asserted."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "bigmachine.sh"


def test_the_quick_big_machine_run_runs_every_step(tmp_path: Path) -> None:
    results = tmp_path / "results"
    env = dict(
        os.environ, PYTHON=sys.executable, BENCH_RESULTS=str(results), BENCH_DATA=str(tmp_path)
    )
    proc = subprocess.run(
        ["bash", str(SCRIPT), "--quick"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    assert "W9 prsd N=1 #0: status ok" in out and "W9 prsd N=2 #0: status ok" in out
    assert "W1-W4 with 2 workers" in out
    for key in ("W1 mb10", "W2 mb10", "W3 mb50", "W4 csv", "W4 parquet"):
        assert f"| {key} | prsd-run | ok" in out, key
    gpu = [line for line in out.splitlines() if line.startswith(("GPU part skipped:", "GPU util"))]
    assert len(gpu) == 1, out[-2000:]
    assert out.rstrip().endswith("big-machine run: done")
    tables = list(results.glob("tiny-2*.md"))  # tiny-latest.md aside
    assert len(tables) == 2  # the W9 table and the W1-W4 table
