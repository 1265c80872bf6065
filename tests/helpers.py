"""Test helpers shared by the suites: waiting on conditions, not on clocks."""

from __future__ import annotations

import subprocess
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from pathlib import Path


def wait_until(predicate: Callable[[], bool], timeout_s: float, what: str = "condition") -> None:
    """Poll ``predicate`` until it holds; fail the test (with ``what``) after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    delay = 0.005
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def stop_daemons(procs: Iterable[subprocess.Popen[bytes]], grace_s: float = 60) -> None:
    """SIGTERM every daemon, then wait for each (SIGKILL after ``grace_s``): none outlives the test."""
    procs = list(procs)
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def final_record(state_dir: Path) -> bytes:
    """A job's whole final record, as root reads it once ``final.json`` exists:
    ``final.private.json`` (with the reason), or ``final.json`` where the leader wrote
    no private copy.

    Raises:
        OSError: neither can be read.
    """
    public = (state_dir / "final.json").read_bytes()  # written last: the job has ended
    try:
        return (state_dir / "final.private.json").read_bytes()
    except FileNotFoundError:
        return public
