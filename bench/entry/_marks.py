"""Marks the wall time of the first ``run()`` call in each process (BENCH_MARK_DIR)."""

import os
import time

_marked = False


def first_run() -> None:
    """Write ``first-<pid>`` with the current wall time, once per process."""
    global _marked
    if _marked:
        return
    _marked = True
    folder = os.environ.get("BENCH_MARK_DIR")
    if folder:
        path = os.path.join(folder, f"first-{os.getpid()}")
        with open(path, "w", encoding="utf-8") as f:
            f.write(repr(time.time()))
