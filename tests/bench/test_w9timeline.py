"""``python -m bench.w9timeline``: a W9 run's time, split from the workers' records; the
split itself (pure) on made-up calls, and one tiny real run. No timing is asserted
beyond "measured"."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from bench.w9timeline import Record, read_times, timeline
from tests.bench.benchkit import run_bench

if TYPE_CHECKING:
    from pathlib import Path


def test_gaps_are_split_into_one_task_and_across_tasks() -> None:
    submit = 100.0
    one = [  # items 0, 1, 2 (one task), then 7 (the next task)
        (100.5, 100.52, "item0000000"),
        (100.521, 100.541, "item0000001"),
        (100.543, 100.563, "item0000002"),
        (100.573, 100.593, "item0000007"),
    ]
    two = [(100.7, 100.72, "item0000003"), (100.72, 100.74, "item0000004")]
    records = [Record(100.2, 100.3, one), Record(100.4, 100.6, two), Record(100.1, 100.2, [])]
    row = timeline(records, submit, final=101.0, spec=100.05)
    assert row["workers"] == 2 and row["calls"] == 6  # a worker with no call is left out
    assert row["spec_s"] == pytest.approx(0.05)
    assert row["imported_s"] == [pytest.approx(0.2), pytest.approx(0.3), pytest.approx(0.4)]
    assert row["init_s"] == [pytest.approx(0.3), pytest.approx(0.45), pytest.approx(0.6)]
    assert row["first_run_s"] == [0.5, 0.6, 0.7]
    assert row["within_gap_ms"][0] == pytest.approx(1.0, abs=0.01)  # 1, 2 and 0 ms
    assert row["within_sum_s"] == pytest.approx(0.0015, abs=1e-4)  # (1 + 2 + 0) ms / 2
    assert row["between_gap_ms"] == [pytest.approx(10.0, abs=0.01)] * 2
    assert row["nap_ms"] == pytest.approx(20.0, abs=0.01)
    assert row["last_end_s"] == pytest.approx(0.74) and row["final_s"] == pytest.approx(1.0)


def test_the_records_file_is_read_back(tmp_path: Path) -> None:
    path = tmp_path / "times-1.txt"
    path.write_text("# 1.5 2.5\n3.0 3.02 item0000004\n3.03 3.05 item0000005\n")
    calls = [(3.0, 3.02, "item0000004"), (3.03, 3.05, "item0000005")]
    assert read_times(path) == Record(1.5, 2.5, calls)


def test_a_tiny_run_records_every_call(tmp_path: Path) -> None:
    out = tmp_path / "timeline.json"
    run_bench("w9timeline", ["--agents", "1", "--seconds", "0.5"] + ["--out", str(out)])
    (row,) = json.loads(out.read_text(encoding="utf-8"))
    assert row["state"] == "Completed", row
    assert row["workers"] == 2 and row["calls"] == row["mini_batches"] == 50
    low, mid, high = row["first_run_s"]
    assert 0 < low <= mid <= high < row["last_end_s"] <= row["final_s"]
    assert 0 < row["spec_s"] < row["imported_s"][0] <= row["init_s"][0] <= low
    assert row["nap_ms"] >= 20.0  # a 20 ms sleep never returns early
    assert 0 < row["efficiency"] <= 1
