"""prsctl's settings file and its liveness lines (pure parts)."""

from __future__ import annotations

import pytest

from prsd.cli.liveness import Fleet, fleet_warning
from prsd.cli.settings import parse_env_text


def test_env_file_lines() -> None:
    """NAME=value lines as systemd reads them: comments, blanks and other lines skipped."""
    text = "# c\n\nPRSD_SPOOL=/mnt/prsd/spool\nPRSD_NODE_ID=\n junk\nA=\"q v\"\nB='x'\n"
    assert parse_env_text(text) == {
        "PRSD_SPOOL": "/mnt/prsd/spool",
        "PRSD_NODE_ID": "",
        "A": "q v",
        "B": "x",
    }


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
