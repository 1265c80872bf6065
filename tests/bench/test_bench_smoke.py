"""The benchmark harness's runners on tiny inputs: they run, and their outputs agree.

No timing is asserted (BENCH.md: benchmarks never run in the test suite); what is
tested is that every runner produces the complete, identical output the harness
compares, and that the prsd-only measurements (W6, W7, W8) and W9 produce their figures.
Ray is left out here: its start-up alone takes 5-10 s and 1.5 GB on these machines
(see bench/README.md); the full suite runs it.
"""

from __future__ import annotations

import itertools
import os
from typing import TYPE_CHECKING

import pytest

from bench import fleet, special, w7roles
from bench.cases import Case, build_cases
from bench.execute import Sample, leader_nice, run_once, tabular_unsupported
from bench.goals import judge
from bench.inputs import file_set, table_set
from bench.split import chunks, csv_units, list_files
from bench.stats import alternation, check_outputs, paired_ratio

if TYPE_CHECKING:
    from pathlib import Path

RUNNERS = ("prsd-run", "prsd-daemons", "sequential", "pool", "dask")


@pytest.fixture(autouse=True)
def _data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_DATA", str(tmp_path / "data"))


def _run_all(case: Case, work: Path) -> list[Sample]:
    samples = [run_once(case, runner, work, 0) for runner in case.runners]
    check_outputs(samples, case.items, "sequential")
    return samples


def test_w1_runners_write_identical_complete_output(tmp_path: Path) -> None:
    cases, _ = build_cases("tiny", ("W1",), RUNNERS)
    case = next(c for c in cases if c.variant == "mb10")
    samples = _run_all(case, tmp_path / "work")
    assert [(s.runner, s.status, s.note) for s in samples] == [(r, "ok", "") for r in RUNNERS]
    assert {s.output_sha256 for s in samples} == {samples[0].output_sha256}
    assert {s.output_lines for s in samples} == {case.items}
    for s in samples:
        assert s.wall_s is not None and s.wall_s > 0
        assert s.first_run_s is not None and 0 < s.first_run_s < s.wall_s
        if s.runner.startswith("prsd"):
            assert s.prsd_rss_mb is not None and s.prsd_rss_mb > 10


def test_w4_tabular_rows_identical_or_prsd_unsupported(tmp_path: Path) -> None:
    csv_path, parquet_path = table_set(300_000, 100_000)
    for kind, path in (("csv", csv_path), ("parquet", parquet_path)):
        case = Case("W4", kind, "table.py", kind, str(path), 100_000, 7500, 3, RUNNERS[:4])
        samples = _run_all(case, tmp_path / "work")
        by_runner = {s.runner: s for s in samples}
        assert by_runner["sequential"].ok and by_runner["pool"].ok, samples
        reason = tabular_unsupported(kind)
        for runner in ("prsd-run", "prsd-daemons"):
            s = by_runner[runner]
            if reason is None:
                assert (s.status, s.output_sha256) == ("ok", by_runner["sequential"].output_sha256)
            else:
                assert (s.status, s.note) == ("unsupported", reason)


def test_w8_two_agents_no_double_claims(tmp_path: Path) -> None:
    result = fleet.w8_many_agents(300, (2,), 1, tmp_path / "work")
    [row] = result["samples"]
    assert row["status"] == "ok", row
    assert row["double_claims"] == 0
    assert result["summary"][0]["mbs_per_s"] > 0
    assert 0 < row["machine_busy"] <= 1  # two agents and their workers kept a core busy


@pytest.mark.parametrize("declared", [True, False])
def test_w6_reports_planning_figures(tmp_path: Path, declared: bool) -> None:
    result = special.w6_scale(1000, tmp_path / "work", timeout_s=60, declared=declared)
    assert result["state"] == "Completed" and result["output_ok"], result
    assert result["declared"] is declared
    assert 0 < result["taken_in_s"] <= result["first_claimable_s"] <= result["wall_s"]
    assert result["first_claimable_s"] <= result["first_claimed_s"] <= result["wall_s"]
    assert result["first_claimable_after_intake_s"] == pytest.approx(
        result["first_claimable_s"] - result["taken_in_s"], abs=0.002
    )
    assert 0 < result["all_planned_s"] <= result["wall_s"]
    assert result["leader_rss_mb"] > 10


def test_w7_counts_the_claim_and_commit_renames(tmp_path: Path) -> None:
    result = special.w7_spool_cost((100, 2000), tmp_path / "work", counts=False)
    by_call = result["spool_by_call"]
    for key in ("rename tasks/claimed", "rename tasks/done", "rename results"):
        assert by_call.get(key, 0) > 0, by_call
    # 10 and 200 mini-batches: tasks pack several mini-batches, so two small runs can
    # make the same tasks. The sum over every call also holds calls on a timer that no
    # folder names (a node report, a progress line): it is reported, not checked.
    assert isinstance(result["spool_per_mb"], float) and result["polled_per_s"], result


def test_w7_by_role_puts_task_writes_with_the_leader_and_commits_with_the_agent(
    tmp_path: Path,
) -> None:
    result = w7roles.w7_by_role((100, 300), tmp_path / "work")
    assert result["tasks"] > 0 and result["mini_batches"] == 30
    leader, agent = (
        result["leader"]["spool_by_call_per_task"],
        result["agent"]["spool_by_call_per_task"],
    )
    assert leader.get("rename tasks/pending", 0) > 0 and "rename tasks/pending" not in agent
    assert agent.get("rename tasks/done", 0) == 1.0 and "rename tasks/done" not in leader
    assert agent.get("rename tasks/claimed", 0) >= 1.0


def test_categorize_strace_lines() -> None:
    spool = "/s/p"
    cases = {
        '12 renameat2(AT_FDCWD</w>, "/s/p/jobs/j/tasks/pending/000000/x", AT_FDCWD</w>, '
        '"/s/p/jobs/j/tasks/claimed/n1/x", RENAME_NOREPLACE) = 0': ("renameat2", "tasks/claimed"),
        '12 openat(AT_FDCWD</w>, "/usr/lib/python3.11/os.py", O_RDONLY) = 3': (
            "openat",
            "not spool",
        ),
        '12 newfstatat(3</s/p/jobs/j/results/000000/x.res>, "", {st_mode=S_IFREG}, '
        "AT_EMPTY_PATH) = 0": ("fstat", "results"),
        "12 getdents64(4</s/p/active>, 0x55 /* 2 entries */, 32768) = 48": (
            "getdents64",
            "active",
        ),
    }
    for line, want in cases.items():
        assert special.categorize(line, spool) == want
    assert special.categorize("12 <... openat resumed>) = 3", spool) is None


def test_listing_and_splitting(tmp_path: Path) -> None:
    root = file_set(25, 3)
    files = list_files(str(root))
    assert [os.path.basename(f) for f in files] == [f"item{i:07d}" for i in range(25)]
    assert [len(c) for c in chunks(files, 10)] == [10, 10, 5]
    csv_path, _ = table_set(50_000, 10_000)
    units = csv_units(str(csv_path), 7_000)
    header = len(csv_path.read_bytes().split(b"\n", 1)[0]) + 1
    assert units[0][2] == header and units[-1][3] == csv_path.stat().st_size
    data = csv_path.read_bytes()
    for (_, _, start, end), (_, _, nxt, _) in itertools.pairwise(units):
        assert end == nxt and data[end - 1 : end] == b"\n" and start < end


def test_alternation_and_paired_ratios() -> None:
    assert alternation(["a", "b", "c"], 0) == ["a", "b", "c"]
    assert alternation(["a", "b", "c"], 1) == ["b", "c", "a"]

    def s(runner: str, repeat: int, wall: float) -> Sample:
        return Sample("W1", "mb10", runner, repeat, "ok", wall_s=wall)

    samples = [s("prsd-run", 0, 2.0), s("pool", 0, 1.0), s("prsd-run", 1, 3.0), s("pool", 1, 1.0)]
    assert paired_ratio(samples, "prsd-run", "pool") == 2.5
    samples[3].status = "failed"
    assert paired_ratio(samples, "prsd-run", "pool") == 2.0


def test_check_outputs_flags_incomplete_and_different() -> None:
    good = Sample("W1", "v", "sequential", 0, "ok", output_sha256="a", output_lines=3)
    other = Sample("W1", "v", "pool", 0, "ok", output_sha256="b", output_lines=3)
    short = Sample("W1", "v", "dask", 0, "ok", output_sha256="a", output_lines=2)
    check_outputs([good, other, short], 3, "sequential")
    assert (good.status, other.status, short.status) == ("ok", "mismatch", "mismatch")
    assert "sequential" in other.note and "2 output lines" in short.note


def test_w9_fleet_runs_prsd_and_dask_side_by_side(tmp_path: Path) -> None:
    """W9 at a tiny size: both systems finish every mini-batch, prsd's CPU figures and
    polling cost are read, no double claim, and the goals are judged from the summary."""
    doc = fleet.w9_fleet((1, 2), 0.2, 0.02, ("prsd", "dask"), 1, tmp_path / "work")
    rows = {(r["system"], r["agents"]): r for r in doc["samples"]}
    assert set(rows) == {("prsd", 1), ("prsd", 2), ("dask", 1), ("dask", 2)}
    for (system, n), row in rows.items():
        assert row["status"] == "ok", row
        assert row["mini_batches"] == fleet.plan_count(n, 0.2, 0.02)
        assert 0 < row["efficiency"] <= 1.0, row
        assert row["tree_us_per_mb"] > 0
        if system == "prsd":
            assert row["double_claims"] == 0
            assert row["leader_us_per_mb"] > 0 and row["agents_us_per_mb"] > 0
            assert row["idle_agent_cpu_ms_per_s"] >= 0
            # the leader runs at its unit's nice value, as deployed (lowering needs root)
            assert row["leader_nice"] == (leader_nice() if os.geteuid() == 0 else 0), row
    goals = {g["goal"]: g for g in judge([], {"W9": doc})}
    assert goals["W9: double claims 0"]["met"] is True
    assert goals["W9: prsd ahead of dask at every N"]["figure"].startswith("N=1: ")
    assert goals["W9: prsd efficiency >= 90% at N = 32"]["met"] is None


def test_the_leader_s_nice_value_is_read_from_its_unit(tmp_path: Path) -> None:
    unit = tmp_path / "prsd-leader.service"
    unit.write_text("[Service]\nUser=root\nNice=-7\n", encoding="utf-8")
    assert leader_nice(unit) == -7
    unit.write_text("[Service]\nUser=root\n", encoding="utf-8")
    assert leader_nice(unit) == 0
    assert leader_nice() < 0  # the repository's unit


def test_w9_sizes_and_goals_are_pure() -> None:
    assert fleet.plan_count(32, 20.0, 0.02) == 64_000
    assert fleet.ideal_rate(32, 0.02) == 3200.0
    summary = [
        {
            "system": "prsd",
            "agents": 8,
            "efficiency": 0.96,
            "double_claims": 0,
            "leader_us_per_mb": 25.0,
            "agents_us_per_mb": 200.0,
        },
        {"system": "dask", "agents": 8, "efficiency": 0.97},
    ]
    goals = {g["goal"]: g["met"] for g in judge([], {"W9": {"summary": summary}})}
    assert goals["W9: prsd efficiency >= 95% at N = 8"] is True
    assert goals["W9: prsd ahead of dask at every N"] is False
    assert goals["W9: leader CPU <= 30 µs per mini-batch"] is True
    assert goals["W9: all agents CPU <= 150 µs per mini-batch"] is False
    assert goals["W9: prsd-sshfs efficiency >= 80% at N = 8"] is None
