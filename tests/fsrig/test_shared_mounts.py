"""The spool protocol on separate FUSE mounts of one folder (each its own client caches)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.chaos.chaos import run_chaos
from tests.fsrig.rig import EXPORT, fresh_dir, mounts, race

if TYPE_CHECKING:
    from pathlib import Path


@pytest.mark.timeout(600)
def test_eight_agents_race_for_ten_thousand_tasks() -> None:
    result = race(10_000, 8)
    print(f"8 agents on 8 mounts: {result.per_s:.0f} claims/s, double {result.double}")
    assert result.claimed == 10_000
    assert result.double == 0
    assert result.lost == 0


@pytest.mark.timeout(600)
def test_chaos_with_every_daemon_on_its_own_mount(tmp_path: Path) -> None:
    mnts = mounts(5)
    name = fresh_dir()
    views = {"leader0": mnts[0] / name, "leader1": mnts[1] / name}
    views |= {f"node{i}": mnts[2 + i] / name for i in range(3)}
    report = run_chaos(
        tmp_path,
        items=2_000,
        size=10,
        per_mb_s=0.03,
        every_s=2.5,
        seed=5,
        spool=EXPORT / name,
        views=views,
        chaos_s=30,
    )
    print(report.line())
    assert report.problems == [], report.line()
    assert report.identical and report.accounted
    assert report.duplicates == 0
