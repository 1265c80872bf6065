"""The chaos tests' fleet: daemons on a spool of the test's own, stopped afterwards.

A module whose fleet needs more (a spool on a mount, two FUSE clients) defines its own
``fleet`` fixture, which pytest prefers over this one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.fleet import Fleet

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    f = Fleet(tmp_path / "spool", tmp_path / "daemon-logs")
    yield f
    f.close()
