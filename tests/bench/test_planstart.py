"""``python -m bench.planstart``: the plan through the planner process, both trees run.

The same tree stands in for "before"; 300 files. No timing is asserted."""

from __future__ import annotations

from tests.bench.benchkit import REPO, run_bench


def test_both_trees_plan_the_whole_input_and_the_medians_are_printed() -> None:
    stdout = run_bench(
        "planstart", ["--before", str(REPO)] + ["--files", "300", "--repeats", "2"], timeout_s=600
    )
    rows = [line for line in stdout.splitlines() if line.startswith("#")]
    assert len(rows) == 4 and all("'mini_batches': 3," in r for r in rows), stdout
    assert "before: 2/2 ok, first mini-batch " in stdout
    assert "after: 2/2 ok, first mini-batch " in stdout
