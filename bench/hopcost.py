"""``python -m bench.hopcost --user NAME [--tasks N]``: what a thread hop costs the agent.

A root agent serving a job of another user makes each claimed task's result file for
that user (``prsd.owner.make_files_for``). Before round 4t it did so in a thread hop of
its own after the claim's; now the feed does it in the claim's hop. This runs both
shapes on real files (a claim-like write and rename, then the owner's file) with
``anyio.to_thread`` as the agent does, alternating, and prints the process's CPU and
wall time per task for each, and an empty hop's CPU alone. Needs root and an existing
unprivileged user (``--user``), as the agent would serve.
"""

from __future__ import annotations

import argparse
import os
import pwd
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from prsd.owner import identity, make_files_for

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from prsd.owner import RunAs


def shapes(root: Path, run_as: RunAs, n: int) -> dict[str, Callable[[], Awaitable[None]]]:
    """The three shapes, each over ``n`` tasks in ``root``."""
    results = root / "results"

    def claim(i: int) -> None:  # stands for the claim: a task file renamed to the node
        path = root / f"pending-{i}"
        path.write_bytes(b"task")
        path.rename(root / f"claimed-{i}")

    def prepare(i: int) -> None:
        make_files_for(run_as, [results / f"r{i}"], anchor=root)

    async def two_hops() -> None:
        for i in range(n):
            await anyio.to_thread.run_sync(claim, i)
            await anyio.to_thread.run_sync(prepare, i)

    async def one_hop() -> None:
        for i in range(n):
            await anyio.to_thread.run_sync(lambda i=i: (claim(i), prepare(i)))

    async def empty() -> None:
        for _ in range(n):
            await anyio.to_thread.run_sync(int)

    return {
        "claim, then the owner's file (two hops)": two_hops,
        "both in the claim's hop (one hop)": one_hop,
        "an empty hop": empty,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--user", required=True, help="an unprivileged user to make files for")
    p.add_argument("--tasks", type=int, default=3000)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench.hopcost needs root (it makes files for another user)")
    entry = pwd.getpwnam(args.user)
    root = Path(tempfile.mkdtemp(prefix="prsd-hopcost-"))
    (root / "results").mkdir()
    n = args.tasks
    runs = shapes(root, identity(entry.pw_uid, entry.pw_gid), n)
    cpu: dict[str, list[float]] = {k: [] for k in runs}
    try:
        for _ in range(args.repeats):
            for name, shape in runs.items():
                c0, w0 = time.process_time(), time.monotonic()
                anyio.run(shape)
                c, w = (time.process_time() - c0) / n * 1e6, (time.monotonic() - w0) / n * 1e6
                cpu[name].append(c)
                print(f"{name}: CPU {c:.0f} us/task, wall {w:.0f} us/task")
                for f in [*root.glob("claimed-*"), *root.glob("results/r*")]:
                    f.unlink()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for name, values in cpu.items():
        print(f"median {name}: CPU {statistics.median(values):.0f} us/task")


if __name__ == "__main__":
    main()
