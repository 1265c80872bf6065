"""Daemons started together on a spool that does not exist yet all come up.

A fleet's first boot starts the leader and the agent at once (systemd starts them in
parallel); each makes the spool folder if it is missing. The one that loses the race to
``mkdir`` must carry on with the folder the other made, not die with EEXIST.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING

from prsd.spool.startwait import check_spool_once

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

import pytest


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Threads hand over the interpreter every microsecond: the race window opens often."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def test_starts_racing_to_make_the_spool_all_succeed(tmp_path: Path, fast_switching: None) -> None:
    errors: list[BaseException] = []
    for round_no in range(150):
        root = tmp_path / f"spool{round_no}"
        barrier = threading.Barrier(12)

        def start(root: Path = root, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            try:
                check_spool_once(root, 0)
            except BaseException as exc:  # noqa: BLE001 - collected and asserted below
                errors.append(exc)

        threads = [threading.Thread(target=start) for _ in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert root.is_dir()
    assert errors == []
