"""Claims, commits, give-backs and requeues: every ownership change is one rename.

Invariant: a task file is in exactly one place, and whoever renames it out of a
place owns the next step:

- claim   ``pending/<shard>/T``   -> ``claimed/<node>/T``       (agent; many race, one wins)
- commit  ``claimed/<node>/T``    -> ``done/<shard>/T.<node>``  (agent)
- requeue ``claimed/<node>/T.aN`` -> ``pending/<shard>/T.aN+1`` (leader, node presumed dead)
- return  ``claimed/<node>/T``    -> ``returned/T``             (agent, on drain)

Commit and requeue rename the *same source*, so on any file system with atomic
rename exactly one of them wins: the claim file is the token, and an agent whose
claim was taken away cannot commit (its result file stays, unused, as evidence).
Every destination name is unique to its mover, so an ambiguous error is resolved by
looking at the destination (see :mod:`prsd.spool.atomic`).
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prsd.spool.atomic import move_verified
from prsd.spool.layout import JobLayout, TaskName
from prsd.spool.lease import current_epoch

if TYPE_CHECKING:
    from pathlib import Path

CLAIM_SPREAD = 16
"""A node's first try after a listing is one of the oldest this many names (its own)."""


@dataclass(frozen=True)
class Claim:
    """A task this node now owns, with the task file's bytes read at claim time."""

    task: TaskName
    path: Path
    body: bytes


def list_pending(job: JobLayout, limit: int) -> list[Path]:
    """Up to ``limit`` pending task files, lowest shard and name first.

    Task files named with an epoch older than the current leader's are left out: a
    deposed leader's late writes are never run (the new leader renames the older
    epoch's pending tasks to its own when it takes over). The listing may be stale
    on a network file system; a stale entry only costs a lost claim race.
    """
    try:
        shards = sorted(e.name for e in os.scandir(job.pending) if not e.name.startswith("."))
    except FileNotFoundError:
        return []
    epoch = current_epoch(job.spool)
    found: list[Path] = []
    for shard in shards:
        folder = job.pending / shard
        try:
            with os.scandir(folder) as it:
                names = sorted(e.name for e in it if not e.name.startswith("."))
        except FileNotFoundError:
            continue
        # Paths for the first ``limit`` names only: a shard may hold thousands of tasks,
        # and every agent with an idle worker lists it at each task written.
        for name in names:
            if _epoch_of(name) >= epoch:
                found.append(folder / name)
                if len(found) >= limit:
                    return found
    return found


def prepare_node(job: JobLayout, node_id: str) -> None:
    """Create ``claimed/<node>/`` (once per job and node, before the first claim)."""
    job.claimed_dir(node_id).mkdir(parents=True, exist_ok=True)


def try_claim(job: JobLayout, node_id: str, pending_path: Path) -> Claim | None:
    """Claim one pending task file; None if another node got it first.

    Raises:
        OSError: the claimed file could not be read after the claim (it stays in
            ``claimed/<node>/``, where the node's reconciliation finds it).
    """
    task = TaskName.parse(pending_path.name)
    if task is None:
        return None
    dest = job.claimed_task(node_id, task)
    if not move_verified(pending_path, dest):
        return None
    return Claim(task, dest, dest.read_bytes())


def commit(job: JobLayout, node_id: str, task: TaskName) -> bool:
    """Mark a claimed task done; False when the claim was taken away (result void)."""
    return move_verified(job.claimed_task(node_id, task), job.done_task(task, node_id))


def give_back(job: JobLayout, node_id: str, task: TaskName) -> bool:
    """Hand a claimed, unfinished task back to the leader; False if it was already taken."""
    return move_verified(job.claimed_task(node_id, task), job.returned_task(task))


def requeue(job: JobLayout, src: Path, new_task: TaskName) -> bool:
    """Leader: move a task file (claimed by a dead node, or returned) back to pending.

    False when the source was gone: the node committed it first, or an earlier
    requeue already happened; the caller decides by looking at ``done/``.
    """
    dest = job.pending_task(new_task)
    dest.parent.mkdir(parents=True, exist_ok=True)
    return move_verified(src, dest)


def own_claims(job: JobLayout, node_id: str) -> list[TaskName]:
    """Task names in ``claimed/<node>/``: a fresh listing (reconciliation, start-up)."""
    try:
        with os.scandir(job.claimed_dir(node_id)) as it:
            names = [TaskName.parse(e.name) for e in it if not e.name.startswith(".")]
    except FileNotFoundError:
        return []
    return sorted(n for n in names if n is not None)


def _epoch_of(name: str) -> int:
    task = TaskName.parse(name)
    return -1 if task is None else task.epoch


def claim_order(node_id: str, listing: list[Path]) -> list[Path]:
    """The order in which this node tries the names of ``listing`` (oldest first, as
    listed): first one name of its own among the oldest :data:`CLAIM_SPREAD` (a hash
    of its id), then every other name, oldest first.

    Nodes listing the same folder at once (one task file wakes them all) then try
    different files first instead of all racing for the oldest (every lost race costs
    a rename and a look at the destination), and no name waits behind newer ones for
    more than one claim of this node: the leader shrinks the last tasks of a job so
    that none keeps a worker busy while the rest wait, which holds only if the
    tasks are taken about in the order they were written.
    """
    if len(listing) <= 1:
        return listing
    k = zlib.crc32(node_id.encode()) % min(len(listing), CLAIM_SPREAD)
    return [listing[k], *listing[:k], *listing[k + 1 :]]
