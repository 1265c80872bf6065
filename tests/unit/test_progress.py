"""The progress overview: daily file names from an injected clock, Azure's wording."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

import pytest

from prsd.leader.run.joblogs import JobLogs, overview_name
from prsd.spool.durations import format_duration
from prsd.spool.layout import JobLayout

if TYPE_CHECKING:
    from pathlib import Path

TZ = timezone(timedelta(hours=2))


@pytest.mark.parametrize(
    ("when", "name"),
    [
        (datetime(2026, 3, 1, 0, 0, 0, tzinfo=TZ), "job_progress_overview.20260301.txt"),
        (datetime(2026, 3, 1, 23, 59, 59, 999999, tzinfo=TZ), "job_progress_overview.20260301.txt"),
        (datetime(2026, 12, 31, 23, 59, 59, tzinfo=TZ), "job_progress_overview.20261231.txt"),
        (datetime(2027, 1, 1, 0, 0, 0, tzinfo=TZ), "job_progress_overview.20270101.txt"),
    ],
)
def test_overview_name_is_the_local_date(when: datetime, name: str) -> None:
    """The overview's file name is the date of the moment passed in."""
    assert overview_name(when) == name


def test_overview_rotates_across_midnight(tmp_path: Path) -> None:
    """Lines before and after midnight land in two files, each in order, none lost."""
    layout = JobLayout(tmp_path / "job", "job")
    logs = JobLogs(layout)
    try:
        start = datetime(2026, 11, 23, 23, 59, 58, tzinfo=TZ)
        for k in range(5):
            logs.progress(f"event {k}", now=start + timedelta(seconds=k))
    finally:
        logs.close()
    day1 = (layout.logs / "job_progress_overview.20261123.txt").read_text().splitlines()
    day2 = (layout.logs / "job_progress_overview.20261124.txt").read_text().splitlines()
    assert [line.split(" ", 1)[1] for line in day1] == ["event 0", "event 1"]
    assert [line.split(" ", 1)[1] for line in day2] == ["event 2", "event 3", "event 4"]
    assert day1[0].startswith("2026-11-23T23:59:58.000000 ")
    assert day2[0].startswith("2026-11-24T00:00:00.000000 ")
    master = (layout.logs / "sys" / "master_role.txt").read_text().splitlines()
    assert master[-1] == "2026-11-23T22:00:02.000+00:00 progress: event 4"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0:00:00"), (59.9, "0:00:59"), (3600, "1:00:00"), (18134, "5:02:14"), (-3, "0:00:00")],
)
def test_format_duration(seconds: float, text: str) -> None:
    """Durations are printed as Azure prints them (h:mm:ss)."""
    assert format_duration(seconds) == text
