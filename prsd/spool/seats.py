"""Seats: ``resources.instance_count`` caps how many nodes work on one job.

Invariant: seat ``k`` of a job is the file ``jobs/<id>/seats/<k>``, created with
``O_EXCL`` and holding the node id of its holder; a node works on a capped job only
while it holds a seat. Seats of a node presumed dead are freed by the leader; a
draining node frees its own.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from prsd.spool.atomic import create_exclusive

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.spool.layout import JobLayout


def seats_dir(job: JobLayout) -> Path:
    return job.root / "seats"


def _holders(job: JobLayout) -> dict[str, str]:
    folder = seats_dir(job)
    out: dict[str, str] = {}
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return out
    for name in names:
        if name.isdigit():
            try:
                out[name] = (folder / name).read_text(encoding="utf-8").strip()
            except OSError:
                continue
    return out


def take_seat(job: JobLayout, node_id: str, count: int) -> bool:
    """Hold one of the job's ``count`` seats (True), or find them all taken (False)."""
    holders = _holders(job)
    if node_id in holders.values():
        return True
    folder = seats_dir(job)
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(count):
        if str(k) in holders:
            continue
        if create_exclusive(folder / str(k), node_id.encode()):
            return True
        try:
            if (folder / str(k)).read_text(encoding="utf-8").strip() == node_id:
                return True
        except OSError:
            continue
    return False


def free_seats(job: JobLayout, node_id: str) -> int:
    """Free every seat ``node_id`` holds in the job; how many were freed."""
    freed = 0
    for name, holder in _holders(job).items():
        if holder == node_id:
            try:
                os.unlink(seats_dir(job) / name)
                freed += 1
            except FileNotFoundError:
                continue
    return freed
