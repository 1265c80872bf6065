"""prsctl's liveness lines (pure parts)."""

from __future__ import annotations

import pytest

from prsd.read.fleet import Fleet, fleet_warning

T = "2026-01-01T00:00:00+00:00"


@pytest.mark.parametrize(
    ("fleet", "line"),
    [
        (Fleet(None, "", 0, None, ""), "queued: no leader has ever run on this spool"),
        (Fleet(300.0, T, 2, 1.0, T), f"queued: no leader alive since {T} (300 s ago)"),
        (Fleet(1.0, T, 0, None, ""), "queued: no agent has ever served this spool"),
        (Fleet(1.0, T, 0, 95.0, T), f"queued: no agent alive since {T} (95 s ago)"),
        (Fleet(1.0, T, 0, 1.0, T, 1), "queued: every agent alive is draining"),
        (Fleet(1.0, T, 1, 1.0, T), None),
    ],
)
def test_fleet_warning(fleet: Fleet, line: str | None) -> None:
    """One line when nothing would run the work; nothing when a leader and an agent live."""
    got = fleet_warning(fleet, "queued")
    if line is None:
        assert got is None
    else:
        assert got is not None and got.startswith(line), got
