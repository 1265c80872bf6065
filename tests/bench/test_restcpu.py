"""``python -m bench.restcpu``: the daemons' CPU per second while a job's workers sleep,
at a tiny size; and its medians (pure). No timing is asserted beyond "measured"."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from bench.restcpu import summary
from tests.bench.benchkit import run_bench

if TYPE_CHECKING:
    from pathlib import Path


def test_one_sample_measures_the_leader_and_each_agent(tmp_path: Path) -> None:
    out = tmp_path / "rest.json"
    stdout = run_bench(
        "restcpu",
        ["--agents", "2", "--nap", "0.5"]
        + ["--seconds", "1.5", "--repeats", "1", "--out", str(out)],
    )
    (row,) = json.loads(out.read_text(encoding="utf-8"))["samples"]["after"]
    assert row["status"] == "ok", row
    assert len(row["agent_ms_per_s"]) == 2 and len(row["idle_agent_ms_per_s"]) == 2
    assert row["leader_ms_per_s"] > 0  # a leader driving a job spends something
    assert "after: medians {'leader_ms_per_s'" in stdout


def test_the_medians_leave_failed_samples_out() -> None:
    rows: list[dict[str, Any]] = [
        {
            "status": "ok",
            "leader_ms_per_s": 10.0,
            "agent_ms_per_s": [1.0, 3.0],
            "idle_agent_ms_per_s": [0.5],
        },
        {
            "status": "ok",
            "leader_ms_per_s": 30.0,
            "agent_ms_per_s": [5.0],
            "idle_agent_ms_per_s": [1.5],
        },
        {"status": "failed", "note": "exit 1"},
    ]
    assert summary(rows) == {
        "leader_ms_per_s": 20.0,
        "agent_ms_per_s": 3.0,
        "idle_agent_ms_per_s": 1.0,
    }
    assert summary([{"status": "failed"}]) == {}
