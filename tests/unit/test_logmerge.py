"""Merging log files by time for ``prsctl logs``."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from prsd.cli.logmerge import Source, line_time, merge_by_time


@pytest.mark.parametrize(
    ("line", "iso_utc"),
    [
        ("2026-11-23T10:00:01.500Z process000 started", "2026-11-23T10:00:01.500000+00:00"),
        ("2026-11-23T10:00:01.250+00:00 job taken in", "2026-11-23T10:00:01.250000+00:00"),
        ("2026-11-23T12:00:01+02:00 x", "2026-11-23T10:00:01+00:00"),
        ("2026-11-23T10:00:01.000Z|INFO|root|hello", "2026-11-23T10:00:01+00:00"),
    ],
)
def test_line_time_reads_utc_and_offsets(line: str, iso_utc: str) -> None:
    """Leading ISO timestamps with Z, offsets or a pipe after them are understood."""
    t = line_time(line)
    assert t is not None
    assert datetime.fromtimestamp(t, UTC).isoformat() == iso_utc


def test_line_time_local_and_absent() -> None:
    """A naive time is local time; a line without a time has none."""
    local = datetime(2026, 11, 23, 10, 0, 1).astimezone()
    assert line_time("2026-11-23T10:00:01.000000 Start the job.") == local.timestamp()
    assert line_time("Traceback (most recent call last):") is None
    assert line_time("20261123 not a time") is None


def test_merge_orders_by_time_and_keeps_tracebacks_together() -> None:
    """Lines interleave by time; untimed lines stay under their file's previous line."""
    a = Source(
        "[a]",
        [
            "2026-11-23T10:00:01Z a1",
            "2026-11-23T10:00:04Z a2 error:",
            "Traceback",
            "  ValueError",
        ],
    )
    b = Source("[b]", ["2026-11-23T10:00:02Z b1", "2026-11-23T10:00:05Z b2"])
    c = Source("[c]", ["no time at all", "still none"])
    assert merge_by_time([a, b, c]) == [
        "[c] no time at all",
        "[c] still none",
        "[a] 2026-11-23T10:00:01Z a1",
        "[b] 2026-11-23T10:00:02Z b1",
        "[a] 2026-11-23T10:00:04Z a2 error:",
        "[a] Traceback",
        "[a]   ValueError",
        "[b] 2026-11-23T10:00:05Z b2",
    ]


def test_merge_keeps_a_files_order_when_its_clock_steps_back() -> None:
    """A file whose times go backwards is never reordered within itself."""
    a = Source("[a]", ["2026-11-23T10:00:05Z late", "2026-11-23T10:00:01Z early"])
    assert merge_by_time([a]) == ["[a] 2026-11-23T10:00:05Z late", "[a] 2026-11-23T10:00:01Z early"]
