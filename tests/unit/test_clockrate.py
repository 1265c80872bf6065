"""Clock sanity: a local clock's pace against the spool's, from real file stamps."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from prsd.spool.clockrate import ClockRate, rate

if TYPE_CHECKING:
    from pathlib import Path


@pytest.mark.parametrize(
    ("base", "last", "expected"),
    [
        ((0.0, 100.0), (20.0, 102.0), 10.0),  # x10: 20 local s in 2 spool s
        ((5.0, 100.0), (8.0, 103.0), 1.0),
        ((0.0, 100.0), (1.0, 101.0), None),  # under MIN_SPAN_S: not known yet
    ],
)
def test_rate_is_local_seconds_per_spool_second(
    base: tuple[float, float], last: tuple[float, float], expected: float | None
) -> None:
    """The rate compares paces only, whatever the clocks read."""
    assert rate(base, last) == expected


def test_a_fast_clock_is_found_from_the_files_stamps(tmp_path: Path) -> None:
    """Stamps 3 s apart on the file system against 30 s of "local" time: fast, not trusted."""
    clock = ClockRate(tmp_path / ".clock-x")
    clock.sample(0.0)
    assert not clock.trusted() and not clock.fast()  # unknown at first
    st = (tmp_path / ".clock-x").stat()
    os.utime(tmp_path / ".clock-x", (st.st_atime - 3, st.st_mtime - 3))
    clock.base = (0.0, st.st_mtime - 3)
    clock.sample(30.0)
    assert clock.fast() and not clock.trusted()
