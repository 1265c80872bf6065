"""Node ids held in the spool: ``nodes/.holds/<node>/<gen>``, one holder at a time.

Invariant: at most one agent holds a node id. Holding generation ``g`` of a node id
means having created ``nodes/.holds/<node>/<g>`` (nine digits) with ``O_CREAT|O_EXCL``,
its content naming the holder (host, kernel boot id, pid, a random token); the
highest generation present is the holder. A new agent takes the id only by creating
the next generation, so of two agents started at the same instant (cloned machines
with one host name) exactly one creates it and the other reads it and refuses.

A holder found dead (the caller's judgement, :data:`IsStale`) is superseded the same
way, by creating ``g+1``: never by deleting or replacing its file, so no two agents
can both supersede it. A running holder that sees a higher generation than its own
(:func:`superseded_by`) has lost the id and must stop.

File-system assumptions: ``O_EXCL`` is exclusive (NFSv3+, SMB, Lustre; not blob
mounts, which the start-up check refuses); an ambiguous create is resolved by
reading the file back (:func:`~prsd.spool.atomic.create_exclusive`). A record just
created may read empty for an instant: it is read again before it is judged.

Errors: the functions raise ``OSError`` for storage errors of the spool;
:class:`NodeIdInUse` is what an agent refused its node id raises (kept here, beside
the record, so the command line can name it without loading the agent).
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from prsd.errors import PrsdError
from prsd.spool.atomic import create_exclusive

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from prsd.spool.layout import SpoolLayout

GEN_RE = re.compile(r"^(\d{9})$")
_EMPTY_RETRY_S = 0.1
_EMPTY_RETRIES = 20
_MAX_ROUNDS = 8


class NodeIdInUse(PrsdError):
    """Another live agent holds or heartbeats the node id this agent was given."""


@dataclass(frozen=True)
class NodeHolder:
    """The agent that holds a node id (one generation of it)."""

    node_id: str
    host: str
    boot_id: str  # the kernel's boot id (/proc/sys/kernel/random/boot_id)
    pid: int
    token: str  # random per agent process: the heartbeat's ``boot``
    gen: int = 0

    def encode(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def decode(cls, data: bytes, gen: int) -> NodeHolder | None:
        try:
            obj = json.loads(data)
            fields = {k: obj[k] for k in cls.__dataclass_fields__ if k != "gen"}
            return cls(**fields, gen=gen)
        except (ValueError, TypeError, KeyError):
            return None


def holds_dir(spool: SpoolLayout, node_id: str) -> Path:
    return spool.nodes / ".holds" / node_id


def generations(folder: Path) -> list[int]:
    """The generations present in ``folder``, lowest first (none when it is missing)."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    return sorted(int(m.group(1)) for m in map(GEN_RE.match, names) if m)


def read_holder(folder: Path, gen: int) -> NodeHolder | None:
    """The record of generation ``gen``; None when it stays unreadable (a crash between
    create and write) or is gone."""
    path = folder / f"{gen:09d}"
    for _ in range(_EMPTY_RETRIES):
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        found = NodeHolder.decode(data, gen)
        if found is not None:
            return found
        time.sleep(_EMPTY_RETRY_S)
    return None


def try_hold(
    spool: SpoolLayout, me: NodeHolder, is_stale: Callable[[NodeHolder], bool]
) -> tuple[NodeHolder | None, NodeHolder | None]:
    """Take ``me.node_id`` unless a live agent holds it.

        Returns ``(mine, None)`` with the generation taken, or ``(None, holder)`` naming the
        live holder. ``is_stale`` judges the current holder; a record that stays unreadable
    (its creator died between create and write) is superseded.

        Raises:
            OSError: the spool cannot be read or written.
    """
    folder = holds_dir(spool, me.node_id)
    folder.mkdir(parents=True, exist_ok=True)
    for _ in range(_MAX_ROUNDS):
        gens = generations(folder)
        top = gens[-1] if gens else 0
        if top:
            holder = read_holder(folder, top)
            if holder is not None and holder.token == me.token:
                return holder, None
            if holder is not None and not is_stale(holder):
                return None, holder
        mine = NodeHolder(**{**asdict(me), "gen": top + 1})
        if create_exclusive(folder / f"{top + 1:09d}", mine.encode()):
            _prune(folder, top + 1)
            return mine, None
    raise OSError(f"node id {me.node_id!r}: its hold changed hands {_MAX_ROUNDS} times")


def superseded_by(spool: SpoolLayout, mine: NodeHolder) -> NodeHolder | None:
    """The holder of a generation above ``mine``; None while ``mine`` is the highest.

    A missing record of ``mine`` (the folder deleted by hand) is not a loss: nobody
    else holds a higher generation.
    """
    folder = holds_dir(spool, mine.node_id)
    above = [g for g in generations(folder) if g > mine.gen]
    if not above:
        return None
    found = read_holder(folder, above[-1])
    return found or NodeHolder(mine.node_id, "?", "?", 0, "?", above[-1])


def release(spool: SpoolLayout, mine: NodeHolder) -> None:
    """Give the id up at a clean exit (the record removed; a later start need not judge
    it). Errors are ignored: a record left behind is judged stale by its pid or beat."""
    try:
        os.unlink(holds_dir(spool, mine.node_id) / f"{mine.gen:09d}")
    except OSError:
        pass


def _prune(folder: Path, keep_from: int) -> None:
    """Remove generations below ``keep_from`` (best effort: superseded records)."""
    for gen in generations(folder):
        if gen < keep_from:
            try:
                os.unlink(folder / f"{gen:09d}")
            except OSError:
                pass
