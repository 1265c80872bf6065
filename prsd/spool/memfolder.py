"""A job's folder in memory, with the protocol of :class:`prsd.spool.jobfolder.JobFiles`.

Promise: :class:`MemoryJobFolder` keeps a job's files as a dict from path to bytes
(paths of the same :class:`prsd.spool.layout.JobLayout` as the real folder), lists
them as :class:`prsd.spool.jobfolder.JobFolder` does (sorted, dot names left out),
moves them as :func:`prsd.spool.atomic.move_verified` does (the source gone: True
only if the destination is there), keeps task files as their encoded bytes and result
records as :class:`prsd.spool.resultfiles.ResultFile` (placed with :meth:`put_result`,
as an agent's commit would leave them), keeps the seats as a dict from seat to
holder, and records each write,
rename and removal in ``log`` in the order made, so a leader decision is tested, and
the order it writes in read, with no file system. :meth:`MemoryJobFolder.end` writes
in the same order as the real one (texts, status, final record, then ``active/``
removed) and writes the records as the real one's private copies hold them.

Errors: :meth:`MemoryJobFolder.owner` raises
:class:`prsd.spool.jobowner.OwnerRecordError` when no owner was given; ``end``
with ``fail`` naming a path raises (or hands ``on_error``) an ``OSError`` there.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING

from prsd.spool.jobowner import OwnerRecordError
from prsd.spool.taskrecords import TaskBody

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from prsd.spool.finalrecord import FinalState
    from prsd.spool.jobfolder import OnError
    from prsd.spool.jobowner import JobOwner
    from prsd.spool.layout import JobLayout, TaskName
    from prsd.spool.resultfiles import ResultFile
    from prsd.spool.statusrecord import JobStatus

__all__ = ["MemoryJobFolder"]


class MemoryJobFolder:
    """The files of the job at ``layout``, held in memory (see the module docstring)."""

    def __init__(self, layout: JobLayout, owner: JobOwner | None = None) -> None:
        self._layout = layout
        self._owner = owner
        self.files: dict[Path, bytes] = {}
        self.log: list[str] = []  # "write <path>", "move <src> <dest>", "remove <path>"
        self.fail: set[Path] = set()  # writes that fail (OSError), for fault tests
        self.active = True  # active/<job> exists
        self.results: dict[Path, ResultFile] = {}  # result records, by their path
        self.seats: dict[str, str] = {}  # seat -> the node holding it

    @property
    def layout(self) -> JobLayout:
        return self._layout

    def put(self, path: Path, data: bytes = b"") -> None:
        """Place a file (what an agent or an earlier writer left), not logged."""
        self.files[path] = data

    def _names(self, folder: Path) -> list[str]:
        return sorted(
            p.name for p in self.files if p.parent == folder and not p.name.startswith(".")
        )

    def put_result(self, task: TaskName, node_id: str, found: ResultFile) -> None:
        """Place the result record ``node_id`` committed for ``task``, not logged."""
        self.results[self._layout.result(task, node_id)] = found

    def done_shards(self) -> list[str]:
        return sorted({p.parent.name for p in self.files if p.parent.parent == self._layout.done})

    def done_names(self, shard: str) -> list[str]:
        return self._names(self._layout.done / shard)

    def returned_names(self) -> list[str]:
        return self._names(self._layout.returned)

    def void_names(self) -> list[str]:
        return self._names(self._layout.void)

    def claimed_names(self, node_id: str) -> list[str]:
        return self._names(self._layout.claimed_dir(node_id))

    def claimant_nodes(self) -> list[str]:
        claimed = self._layout.claimed
        return sorted({p.parent.name for p in self.files if p.parent.parent == claimed})

    def exists(self, path: Path) -> bool:
        return path in self.files

    def requeue(self, src: Path, new_task: TaskName) -> bool:
        dest = self._layout.pending_task(new_task)
        if src not in self.files:
            return dest in self.files  # as a verified move: the move happened already
        self.files[dest] = self.files.pop(src)
        self.log.append(f"move {src} {dest}")
        return True

    def make_shard(self, shard: str) -> None:
        """Nothing to make: a folder in memory is there once a file is."""

    def write_task(
        self, task: TaskName, body: TaskBody, *, durable: bool, sync_folder: bool = True
    ) -> None:
        self.write(self._layout.pending_task(task), body.encode())

    def sync_pending(self, shards: Iterable[str]) -> None:
        """Nothing to flush: memory has no stable storage."""

    def read_task(self, path: Path) -> TaskBody:
        """The task file at ``path``.

        Raises:
            FileNotFoundError: none there.
            RecordError: not a task file.
        """
        if path not in self.files:
            raise FileNotFoundError(errno.ENOENT, "no such task file (memory folder)", str(path))
        return TaskBody.decode(self.files[path])

    def read_result(self, task: TaskName, node_id: str) -> ResultFile | None:
        return self.results.get(self._layout.result(task, node_id))

    def free_seats(self, node_id: str) -> int:
        freed = [seat for seat, holder in self.seats.items() if holder == node_id]
        for seat in freed:
            del self.seats[seat]
            self.log.append(f"remove seat {seat}")
        return len(freed)

    def owner(self) -> JobOwner:
        if self._owner is None:
            raise OwnerRecordError("no valid owner record: none in memory")
        return self._owner

    def write(self, path: Path, data: bytes) -> None:
        """Replace ``path`` (as an atomic write).

        Raises:
            OSError: ``path`` is in :attr:`fail`.
        """
        if path in self.fail:
            raise OSError(errno.EIO, "a failing write (memory folder)", str(path))
        self.files[path] = data
        self.log.append(f"write {path}")

    def end(
        self,
        final: FinalState,
        status: JobStatus | None,
        texts: Iterable[tuple[Path, bytes]],
        *,
        on_error: OnError | None = None,
    ) -> None:
        """As :meth:`prsd.spool.jobfolder.JobFolder.end`, in memory."""
        steps = list(texts)
        if status is not None:
            steps.append((self._layout.status, status.to_json()))
        steps.append((self._layout.final, final.to_json()))
        for path, data in steps:
            try:
                self.write(path, data)
            except OSError as exc:
                if on_error is None:
                    raise
                on_error(path, exc)
        self.active = False
        self.log.append("remove active")
