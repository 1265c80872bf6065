"""One racing claimant: claims tasks of a job with prsd's own claim code until none are left.

``python -m tests.fsrig.claimer SPOOL JOB NODE OUT`` (SPOOL: this claimant's own mount)
writes the names it won to OUT (a local file, one per line) and exits when it found
nothing to claim for a while.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from prsd.spool.claim import claim_order, list_pending, prepare_node, try_claim
from prsd.spool.opening import open_spool


def main(argv: list[str]) -> int:
    spool_root, job_id, node, out = Path(argv[0]), argv[1], argv[2], Path(argv[3])
    job = open_spool(spool_root, create=False).job(job_id)
    prepare_node(job, node)
    won: list[str] = []
    empty_since: float | None = None
    start = time.monotonic()
    while True:
        listing = claim_order(node, list_pending(job, 256))
        for path in listing:
            claim = try_claim(job, node, path)
            if claim is not None:
                won.append(claim.task.name)
        if listing:
            empty_since = None
            continue
        now = time.monotonic()
        empty_since = empty_since or now
        if now - empty_since > 3.0:
            break
        time.sleep(0.05)
    seconds = (empty_since or time.monotonic()) - start
    out.write_text("\n".join([f"# {seconds:.3f}", *won]) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
