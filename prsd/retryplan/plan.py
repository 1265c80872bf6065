"""Retry planning by content: which inputs run again, which earlier results are kept.

Invariant: every input of the current split is accounted for exactly once, in input
order, either as part of an earlier result that is kept whole (a :class:`Reuse`) or in
a mini-batch that runs again (a :class:`Run`). An earlier result is kept only when
the inputs it covered are, one for one, the inputs now at the same place (same names,
same order, none edited since); anything else runs again. So the output assembled
from the units equals a clean run's over the current input: nothing twice, nothing
missing, whatever was deleted, added or edited since.

An earlier result is a :class:`Kept`: the identity of what it covered (the first
input and a digest of all of them, for file lists; a digest of the payload for
tables) and a reference to its bytes. Kept results of a file list are matched item
by item, so deleting three bad files shifts nothing: only the mini-batches that
failed (or held a deleted or edited file) run again, regrouped into new mini-batches
of ``mini_batch_size``. Table mini-batches (byte ranges, row groups, partition
groups) are matched by payload.

Pure: no I/O and no clock. "Edited since" is a predicate the caller passes
(:mod:`prsd.leader.rerun.retryjob` compares file times with when the earlier job took its
input).
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prsd.wire.records import MiniBatch

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping, Sequence

Changed = Callable[[str, int], bool]  # (input path, earlier job's intake time in ns)


def items_digest(items: Sequence[str]) -> str:
    """A short digest of a list of inputs (names only; order matters)."""
    h = hashlib.blake2b(digest_size=10)
    for item in items:
        h.update(item.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
    return h.hexdigest()


def payload_identity(payload: Any, key: dict[str, Any] | None) -> str:
    """What a table mini-batch held, independent of where the split spilled it.

    A partition group of a table is its key values (its rows are spilled under the
    job's own folder, so the payload's path differs between jobs); any other payload
    is itself (a byte range, row groups, a file list with its key).
    """
    if key is not None and isinstance(payload, dict):
        what: Any = {"key": key}
    else:
        what = {"payload": payload, "key": key}
    return items_digest([json.dumps(what, sort_keys=True, separators=(",", ":"))])


@dataclass(frozen=True)
class Kept:
    """An earlier succeeded result that a retry may keep.

    Attributes:
        ref: its position in the retry's list of earlier results.
        first: the first input it covered (file lists), or its payload identity.
        count: how many inputs it covered (file lists; 1 for tables).
        digest: :func:`items_digest` of those inputs (file lists), or the identity.
        since_ns: when the job that produced it took its input in (epoch ns).
        paths: the input files whose edits void it (tables: the payload's file).
    """

    ref: int
    first: str
    count: int
    digest: str
    since_ns: int
    paths: tuple[str, ...] = ()


@dataclass(frozen=True)
class Run:
    """A mini-batch to run again (its inputs, as the new split planned them)."""

    mb: MiniBatch


@dataclass(frozen=True)
class Reuse:
    """An earlier result kept whole, at this place in the output."""

    ref: int


Unit = Run | Reuse


@dataclass
class PlanNotes:
    """What the planning saw, for the job's logs: kept, voided and missing results."""

    kept: int = 0
    voided: list[str] = field(default_factory=list)  # first inputs of results run again
    seen_failed: set[str] = field(default_factory=set)


def plan_file_units(
    paths: Iterable[str],
    kept: Mapping[str, Kept],
    size: int,
    changed: Changed,
    notes: PlanNotes | None = None,
) -> Iterator[Unit]:
    """Units of a file-list retry, in input order (pure but for ``changed``).

    Args:
        paths: the current input files, in input order.
        kept: earlier results by their first input.
        size: ``mini_batch_size`` of the new mini-batches.
        changed: whether a file was edited since a given time.
        notes: filled with what was kept and voided.
    """
    notes = notes if notes is not None else PlanNotes()
    source = iter(paths)
    back: deque[str] = deque()
    buf: list[str] = []

    def pull() -> str | None:
        return back.popleft() if back else next(source, None)

    while (item := pull()) is not None:
        k = kept.get(item)
        if k is None:
            buf.append(item)
        else:
            got = _gather(item, k, pull, back, kept)
            if _intact(got, k, changed):
                if buf:
                    yield Run(MiniBatch(-1, buf, len(buf)))
                    buf = []
                notes.kept += 1
                yield Reuse(k.ref)
                continue
            notes.voided.append(item)
            buf.extend(got)
        while len(buf) >= size:
            yield Run(MiniBatch(-1, buf[:size], size))
            buf = buf[size:]
    if buf:
        yield Run(MiniBatch(-1, buf, len(buf)))


def _gather(
    first: str,
    k: Kept,
    pull: Callable[[], str | None],
    back: deque[str],
    kept: Mapping[str, Kept],
) -> list[str]:
    """The inputs from ``first`` on that ``k`` would cover, stopping early at another
    kept result's first input (then ``k`` is not intact) or at the end."""
    got = [first]
    while len(got) < k.count:
        nxt = pull()
        if nxt is None:
            break
        if nxt in kept:
            back.appendleft(nxt)
            break
        got.append(nxt)
    return got


def _intact(got: list[str], k: Kept, changed: Changed) -> bool:
    if len(got) != k.count or items_digest(got) != k.digest:
        return False
    return not any(changed(p, k.since_ns) for p in got)


def plan_payload_units(
    mbs: Iterable[MiniBatch],
    kept: Mapping[str, Kept],
    changed: Changed,
    notes: PlanNotes | None = None,
) -> Iterator[Unit]:
    """Units of a table retry: each new mini-batch kept if an identical one succeeded."""
    notes = notes if notes is not None else PlanNotes()
    for mb in mbs:
        k = kept.get(payload_identity(mb.payload, mb.key))
        if k is not None and not any(changed(p, k.since_ns) for p in k.paths):
            notes.kept += 1
            yield Reuse(k.ref)
        else:
            yield Run(mb)


def number_runs(units: Iterable[Unit], order: list[int]) -> Iterator[MiniBatch]:
    """The mini-batches to run, numbered from 0; ``order`` gets every unit in turn
    (``k`` for run mini-batch ``k``, ``-1 - ref`` for a kept result)."""
    k = 0
    for unit in units:
        if isinstance(unit, Reuse):
            order.append(-1 - unit.ref)
            continue
        order.append(k)
        mb = unit.mb
        yield MiniBatch(k, mb.payload, mb.items, mb.key)
        k += 1
