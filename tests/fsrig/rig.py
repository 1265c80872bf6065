"""The FUSE rig of ../shared/fsrig: several sshfs mounts of one folder, one per "machine".

``.ci/run`` sets it up (``K=8 setup_rig.sh sshfs``). Each mount is a separate client
with its own attribute and directory caches, like one VM of a cluster on NFS.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from prsd.spool.layout import TaskName
from prsd.spool.opening import open_spool

RIG = Path(os.environ.get("PRSD_RIG", "/tmp/fsrig"))
MNT = Path(os.environ.get("PRSD_RIG_MNT", "/mnt/fsrig"))
EXPORT = RIG / "export"


def mounts(k: int) -> list[Path]:
    """The first ``k`` sshfs mounts; fails loudly when the rig is not set up."""
    found = [MNT / f"sshfs{i}" for i in range(k)]
    missing = [str(m) for m in found if not os.path.ismount(m)]
    if missing:
        raise AssertionError(
            f"the FUSE rig is not mounted ({', '.join(missing)}); set it up with "
            "`K=8 /work/shared/fsrig/setup_rig.sh sshfs` (.ci/run does)"
        )
    return found


def fresh_dir() -> str:
    """A new folder name under the export (visible through every mount)."""
    name = f"t-{uuid.uuid4().hex[:12]}"
    (EXPORT / name).mkdir(parents=True)
    return name


@dataclass
class RaceResult:
    tasks: int
    agents: int
    seconds: float
    claimed: int
    double: int
    lost: int

    @property
    def per_s(self) -> float:
        return self.claimed / self.seconds if self.seconds > 0 else 0.0


def race(tasks: int, agents: int) -> RaceResult:
    """``agents`` claimants, each on its own mount, race for ``tasks`` pending task files."""
    mnts = mounts(agents)
    name = fresh_dir()
    spool = open_spool(EXPORT / name / "spool")
    job = spool.job("race-1")
    for i in range(tasks):
        task = TaskName(i, 1, 1)
        path = job.pending_task(task)
        if i % 4096 == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    outs = [EXPORT.parent / f"{name}-won-{k}.txt" for k in range(agents)]
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.fsrig.claimer",
                str(mnts[k] / name / "spool"),
                "race-1",
                f"node{k}",
                str(outs[k]),
            ]
        )
        for k in range(agents)
    ]
    start = time.monotonic()
    for p in procs:
        p.wait(timeout=600)
    won: Counter[str] = Counter()
    slowest = 0.0
    for out in outs:
        lines = out.read_text(encoding="utf-8").splitlines()
        slowest = max(slowest, float(lines[0][2:]))
        won.update(lines[1:])
        out.unlink()
    del start
    on_disk = Counter(entry.name for node in (job.claimed).iterdir() for entry in node.iterdir())
    expected = {TaskName(i, 1, 1).name for i in range(tasks)}
    double = sum(1 for n in won.values() if n > 1) + sum(1 for n in on_disk.values() if n > 1)
    lost = len(expected - set(on_disk)) + len(expected - set(won))
    return RaceResult(tasks, agents, slowest, len(won), double, lost)


def main() -> int:
    tasks = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    for agents in (1, 2, 4, 8):
        r = race(tasks, agents)
        print(
            f"{agents} agents: {r.claimed} claims of {r.tasks} in {r.seconds:.2f} s = "
            f"{r.per_s:.0f} claims/s; double {r.double}, lost {r.lost}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
