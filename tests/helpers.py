"""Test helpers shared by the suites: waiting on conditions, not on clocks."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable


def wait_until(predicate: Callable[[], bool], timeout_s: float, what: str = "condition") -> None:
    """Poll ``predicate`` until it holds; fail the test (with ``what``) after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    delay = 0.005
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(delay)
        delay = min(delay * 2, 0.1)
