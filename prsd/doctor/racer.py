"""One side of the doctor's claim race: ``python -m prsd.doctor.racer BASE ROLE``.

Waits for ``go <epoch seconds>`` on stdin (after printing ``ready``), then, at that instant, tries to claim every file
of ``BASE/pool/`` by renaming it into ``BASE/<ROLE>/`` and to create every name
``BASE/excl/x<i>`` with ``O_CREAT|O_EXCL``, exactly as agents and leaders do, and
prints the names it believes it won as one JSON line. Run two of them on one pool
(through two mounts of the share when possible): a name won twice is a double claim.
"""

from __future__ import annotations

import json
import os
import sys
import time

from prsd.spool.listing import names


def race(base: str, role: str, excl_count: int) -> dict[str, list[str]]:
    """Claim what can be claimed; the names this side believes it won."""
    pool = os.path.join(base, "pool")
    mine = os.path.join(base, role)
    renamed = []
    for name in sorted(names(pool)):
        try:
            os.rename(os.path.join(pool, name), os.path.join(mine, name))  # noqa: TID251 - the claim under test
        except OSError:
            continue
        renamed.append(name)
    created = []
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY
    for i in range(excl_count):
        name = f"x{i:05d}"
        try:
            os.close(os.open(os.path.join(base, "excl", name), flags, 0o644))
        except OSError:
            continue
        created.append(name)
    return {"renamed": renamed, "created": created}


def main(argv: list[str]) -> int:
    """Entry point: ``BASE ROLE EXCL_COUNT``."""
    base, role, excl_count = argv[0], argv[1], int(argv[2])
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    words = sys.stdin.readline().split()
    if len(words) != 2 or words[0] != "go":
        return 1
    # Both sides start at one agreed instant, so their claims really interleave.
    time.sleep(max(0.0, float(words[1]) - time.time()))
    sys.stdout.write(json.dumps(race(base, role, excl_count)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
