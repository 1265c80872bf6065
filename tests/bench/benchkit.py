"""A ``python -m bench.<module>`` command run from the checkout, as a reader runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_bench(module: str, args: list[str], timeout_s: float = 300) -> str:
    """Run ``python -m bench.<module> args`` in the checkout and return its stdout; the
    test fails, with the tails of its output, where it exits non-zero."""
    proc = subprocess.run(
        [sys.executable, "-m", f"bench.{module}", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout
