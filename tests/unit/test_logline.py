"""One value, one line: control characters are escaped; logs are never appended through a link."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from prsd.leader.run.joblogs import AttemptRow
from prsd.logline import append_lines, one_line
from prsd.wire.records import Outcome

if TYPE_CHECKING:
    from pathlib import Path


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("a\nroot:x:0:0::/root:/bin/sh", "a\\nroot:x:0:0::/root:/bin/sh"),
        ("a\r\nb", "a\\r\\nb"),
        ("\x1b[2J", "\\x1b[2J"),
        ("nul\0", "nul\\x00"),
        ("del\x7f", "del\\x7f"),
        ("sep\u2028x", "sep\\x2028x"),
        ("plain été", "plain été"),
    ],
)
def test_one_line_escapes_every_control_character(text: str, shown: str) -> None:
    """Newlines, escapes, NUL, DEL and Unicode line separators become visible escapes."""
    assert one_line(text) == shown
    assert len(one_line(text).splitlines()) <= 1


def test_attempt_row_cells_are_one_line_each() -> None:
    """A forged error (or process name) in a result file cannot add a CSV row."""
    outcome = Outcome(0, "failed", process_name="p\nx", error="boom\n000000001,1,succeeded")
    cells = AttemptRow(outcome, 1, "n1").cells()
    assert all("\n" not in c for c in cells)
    assert cells[-1] == "boom\\n000000001,1,succeeded"


def test_append_lines_never_follows_a_link(tmp_path: Path) -> None:
    """A symlink planted in place of a log file is refused; its target stays unchanged."""
    target = tmp_path / "passwd"
    target.write_text("root:x:0:0\n")
    log = tmp_path / "log.txt"
    log.symlink_to(target)
    with pytest.raises(OSError, match="Too many levels of symbolic links"):
        append_lines(log, ["evil"])
    assert target.read_text() == "root:x:0:0\n"
    plain = tmp_path / "plain.txt"
    append_lines(plain, ["a\nb", "c"])
    assert plain.read_text() == "a\\nb\nc\n"


def test_append_lines_makes_a_missing_folder_only_when_asked(tmp_path: Path) -> None:
    log = tmp_path / "sys" / "node" / "n1" / "_main.txt"
    with pytest.raises(FileNotFoundError):
        append_lines(log, ["first"])
    assert not log.parent.exists()
    append_lines(log, (f"line {i}" for i in range(2)), make_folder=True)  # one pass only
    append_lines(log, ["again"], make_folder=True)
    assert log.read_text() == "line 0\nline 1\nagain\n"


def test_error_one_line_escapes_control_characters() -> None:
    """An error carrying a job's text renders to one line with no escape sequence left."""
    from prsd.errors import PrsdError

    assert PrsdError("boom\n\x1b[2Jroot:x\t0").one_line() == "boom \\x1b[2Jroot:x 0"
