"""The cost of making a file in the bench's scratch folder, recorded with every table.

Every task file, result record, heartbeat and status write of prsd is a new file
renamed into place, so the kernel's cost of creating an inode is in the leader's and
the agents' CPU per mini-batch. On the project's 2-core machines that cost is not a
constant of the disk: on one ext4 file system it was 20 µs in one folder, 200 µs in
another and 80 to 1,000 µs in a third within the same hour (bench/README.md, round
4n). A figure is read beside the cost measured in the folder it ran in.

Errors: none raised; a folder where files cannot be made gives None.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import TYPE_CHECKING

from prsd.spool.atomic import write_atomic

if TYPE_CHECKING:
    from pathlib import Path

FILES = 100
ROUNDS = 3


def create_us(folder: Path) -> float | None:
    """Median over :data:`ROUNDS` of the µs per file of prsd's atomic write (a new
    file renamed into place, without fsync) of a small file in ``folder``."""
    probe = folder / f".diskprobe-{os.getpid()}"
    try:
        probe.mkdir(parents=True)
    except OSError:
        return None
    rounds: list[float] = []
    try:
        for r in range(ROUNDS):
            start = time.perf_counter()
            for i in range(FILES):
                write_atomic(probe / f"f-{r}-{i}", b"{}", durable=False)
            rounds.append(1e6 * (time.perf_counter() - start) / FILES)
    except OSError:
        return None
    finally:
        for entry in os.scandir(probe):
            os.unlink(entry.path)
        probe.rmdir()
    return round(statistics.median(rounds), 1)
