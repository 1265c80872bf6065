"""The chaos test at CI size (see tests/chaos/chaos.py for the hand-run form)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.chaos.chaos import run_chaos

if TYPE_CHECKING:
    from pathlib import Path


@pytest.mark.timeout(600)
def test_kills_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    report = run_chaos(
        tmp_path, items=20_000, size=10, per_mb_s=0.02, every_s=1.5, seed=11, chaos_s=30
    )
    print(report.line())
    assert report.problems == [], report.line()
    assert report.identical
    assert report.accounted
    assert report.duplicates == 0
    assert sum(report.kills.values()) >= 5, report.line()
