"""``python -m bench.leaderphases``: one W9 run with the leader's steps timed, at a tiny
size. No timing is asserted: the wrapped steps are called and their totals come back."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_leader_phases_are_counted(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bench.leaderphases", "--seconds", "0.3"]
        + ["--work", str(tmp_path / "w9")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = proc.stdout
    assert proc.returncode == 0, out[-2000:] + proc.stderr[-2000:]
    assert "'status': 'ok'" in out and "leader idle: " in out
    for name in ("Leader.step", "JobDriver.step", "Results.ingest", "TaskTable.write"):
        found = re.search(rf"^{re.escape(name)} +calls +(\d+)", out, re.MULTILINE)
        assert found is not None and int(found.group(1)) > 0, name
