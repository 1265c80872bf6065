"""``python -m bench.sidebyside``: both trees run, alternating, every sample kept.

The same tree stands in for "before" here; W9 at N = 1 for 0.2 s of ideal work. No
timing is asserted."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tests.bench.benchkit import REPO, run_bench

if TYPE_CHECKING:
    from pathlib import Path


def test_both_trees_run_and_the_medians_are_printed(tmp_path: Path) -> None:
    out = tmp_path / "samples.json"
    stdout = run_bench(
        "sidebyside",
        ["--before", str(REPO), "--w9-agents", "1"]
        + ["--w9-seconds", "0.2", "--repeats", "2", "--out", str(out)],
        timeout_s=600,
    )
    samples = json.loads(out.read_text())
    assert [s["tree"] for s in samples] == ["before", "after", "after", "before"]
    assert all(s["row"]["status"] == "ok" and s["row"]["efficiency"] > 0 for s in samples)
    assert "W9 N=1 before: 2/2 ok, eff " in stdout
    assert "W9 N=1 after: 2/2 ok, eff " in stdout


def test_w6_runs_in_both_trees_with_and_without_a_declared_format(tmp_path: Path) -> None:
    out = tmp_path / "samples.json"
    stdout = run_bench(
        "sidebyside",
        ["--before", str(REPO), "--w9-agents", ""]
        + ["--w6-repeats", "1", "--w6-files", "300", "--w6-undeclared", "--out", str(out)],
        timeout_s=600,
    )
    samples = json.loads(out.read_text())
    assert [(s["what"], s["tree"]) for s in samples] == [
        ("300 files", "before"),
        ("300 files", "after"),
        ("300 files, format inferred", "before"),
        ("300 files, format inferred", "after"),
    ]
    assert all(s["row"]["status"] == "ok" and s["row"]["first_claimable_s"] > 0 for s in samples)
    assert "W6 300 files after: 1/1 ok, taken_in_s " in stdout
