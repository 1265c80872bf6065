"""Twin node ids: two agents started at the same instant with one node id.

Cloned machines booted together carry one host name, so their agents default to one
node id. Exactly one of them may run: the other exits 4 (not restarted by the unit)
with one line naming the holder, and a job meanwhile completes with exact output.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

import pytest

from prsd.errors import ExitCode
from tests.chaos.faultkit import expected_lines, make_files_job, output_lines, wait_final
from tests.helpers import wait_until

if TYPE_CHECKING:
    from pathlib import Path

    from tests.fleet import Fleet


@pytest.mark.timeout(240)
@pytest.mark.parametrize("round_", range(3))
def test_twins_started_together_run_one(tmp_path: Path, fleet: Fleet, round_: int) -> None:
    """Of two agents started at once with one id, one runs and one exits 4; exact output."""
    fleet.leader()
    job = fleet.submit(make_files_job(tmp_path, "twins", 120, per_mb=0.05))
    twins = [fleet.agent("twin", "--slots", "2", name=name) for name in ("a", "b")]
    wait_until(lambda: any(p.poll() is not None for p in twins), 60, "one twin to exit")
    ended = [p for p in twins if p.poll() is not None]
    assert len(ended) == 1, "both twins ended"
    assert ended[0].returncode == ExitCode.NODE_ID_TAKEN
    (runner,) = [p for p in twins if p is not ended[0]]
    name = "a" if ended[0] is twins[0] else "b"
    log = (fleet.logs / f"{name}.1.log").read_text(encoding="utf-8")
    lines = [ln for ln in log.splitlines() if "node id 'twin'" in ln]
    assert lines and f"held by agent pid {runner.pid} on host {socket.gethostname()}" in lines[0]
    final = wait_final(fleet, job, 180)
    assert final["state"] == "Completed", final
    assert output_lines(fleet, job) == expected_lines(120)
    assert runner.poll() is None
