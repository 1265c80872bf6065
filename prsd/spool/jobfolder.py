"""One job's folder: the listings and moves the leader decides on, and the one end-of-job writer.

:class:`JobFiles` is the protocol the leader's decisions use; :class:`JobFolder` is
it over the spool (listings of ``done/<shard>/``, ``returned/``, ``void/`` and
``claimed/<node>/``, each sorted, dot names left out, a missing folder an empty
list; the moves of prsd/spool/claim.py; the task files the leader writes into
``pending/`` and reads back from ``done/`` or ``claimed/``; the result records agents
commit, read through one descriptor (prsd/spool/resultfiles.py); the seats of a node
presumed dead freed (prsd/spool/seats.py); the owner of prsd/spool/jobowner.py,
fail-closed), and prsd/spool/memfolder.py is it in memory, so a decision is tested
without files beside the real tests.

Promise: :meth:`JobFolder.end` writes the end of a job in one order, whoever ends it
(the driver at the job's end, the job boundary after a fault, intake refusing a job):

1. the texts that say why (``logs/job_result.txt``, ``logs/job_error.txt``,
   ``logs/user/error.txt``, ...), each replaced atomically, in the order given;
2. the status record (``state/status.private.json``, then ``state/status.json``);
3. the final record last (``state/final.private.json``, then ``state/final.json``):
   whoever sees the job ended finds every file that says why, and its last status;
4. then ``active/<job>`` is removed, so no leader drives the job again.

A reader polling ``final.json`` (``prsd run``, ``prsctl status --watch``, a standby
leader) therefore never finds it before the rest. A job folder that is gone is never
created again: the folders inside it (``logs/user/``, ``state/``) are made as needed,
the job's root never.

Errors: the listings raise ``OSError`` but for a missing folder;
:meth:`JobFolder.write_task` raises ``OSError`` (nothing is left under the task's
name then); :meth:`JobFolder.read_task` raises ``OSError`` and
:class:`prsd.wire.fields.RecordError` for a file that is not a task;
:meth:`JobFolder.read_result` answers None for a missing or torn result and raises
:class:`prsd.spool.resultfiles.UntrustedResult` for a link or a replaced file;
:meth:`JobFolder.owner` raises :class:`prsd.spool.jobowner.OwnerRecordError`;
:meth:`JobFolder.end` raises the first ``OSError`` (nothing after it is written),
unless ``on_error`` is given: then each file that cannot be written is passed to it
and the others are still written (a job failed by a fault says as much as its folder
still allows).
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Protocol

from prsd.spool import claim, jobowner, privaterecords, seats
from prsd.spool.atomic import fsync_dir, write_atomic
from prsd.spool.listing import listing
from prsd.spool.resultfiles import read_result
from prsd.spool.taskrecords import TaskBody

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from pathlib import Path

    from prsd.spool.finalrecord import FinalState
    from prsd.spool.jobowner import JobOwner
    from prsd.spool.layout import JobLayout, SpoolLayout, TaskName
    from prsd.spool.resultfiles import ResultFile
    from prsd.spool.statusrecord import JobStatus

    OnError = Callable[[Path, OSError], None]

__all__ = ["JobFiles", "JobFolder", "listing"]


class JobFiles(Protocol):
    """What the leader's decisions read and change in one job's folder."""

    @property
    def layout(self) -> JobLayout: ...

    def done_shards(self) -> list[str]: ...

    def done_names(self, shard: str) -> list[str]: ...

    def returned_names(self) -> list[str]: ...

    def void_names(self) -> list[str]: ...

    def claimed_names(self, node_id: str) -> list[str]: ...

    def claimant_nodes(self) -> list[str]: ...

    def exists(self, path: Path) -> bool: ...

    def requeue(self, src: Path, new_task: TaskName) -> bool: ...

    def make_shard(self, shard: str) -> None: ...

    def write_task(
        self, task: TaskName, body: TaskBody, *, durable: bool, sync_folder: bool = True
    ) -> None: ...

    def sync_pending(self, shards: Iterable[str]) -> None: ...

    def read_task(self, path: Path) -> TaskBody: ...

    def read_result(self, task: TaskName, node_id: str) -> ResultFile | None: ...

    def free_seats(self, node_id: str) -> int: ...

    def owner(self) -> JobOwner: ...

    def end(
        self,
        final: FinalState,
        status: JobStatus | None,
        texts: Iterable[tuple[Path, bytes]],
        *,
        on_error: OnError | None = None,
    ) -> None: ...


def _no_grant(fd: int) -> None:
    """Nobody beyond the job's group."""


class JobFolder:
    """The folder ``jobs/<job_id>`` of ``spool``; ``grant`` is handed each private
    record's descriptor (see prsd/spool/privaterecords.py)."""

    def __init__(
        self, spool: SpoolLayout, job_id: str, *, grant: Callable[[int], None] = _no_grant
    ) -> None:
        self.spool = spool
        self.job_id = job_id
        self.layout = spool.job(job_id)
        self.grant = grant

    @classmethod
    def of(cls, layout: JobLayout, *, grant: Callable[[int], None] = _no_grant) -> JobFolder:
        """The folder of ``layout``."""
        return cls(layout.spool, layout.job_id, grant=grant)

    def done_shards(self) -> list[str]:
        """The shards of ``tasks/done/`` (``0000``, ``0001``, ...)."""
        return listing(self.layout.done)

    def done_names(self, shard: str) -> list[str]:
        """The commits in ``tasks/done/<shard>/`` (``<task>.<node>``)."""
        return listing(self.layout.done / shard)

    def returned_names(self) -> list[str]:
        """The tasks handed back unrun, in ``tasks/returned/``."""
        return listing(self.layout.returned)

    def void_names(self) -> list[str]:
        """The unreadable task files agents set aside, in ``tasks/void/`` (``<task>.<node>``)."""
        return listing(self.layout.void)

    def claimed_names(self, node_id: str) -> list[str]:
        """The tasks ``node_id`` holds, in ``tasks/claimed/<node>/``."""
        return listing(self.layout.claimed_dir(node_id))

    def claimant_nodes(self) -> list[str]:
        """The nodes with a ``tasks/claimed/<node>/`` folder in the job."""
        return listing(self.layout.claimed)

    def exists(self, path: Path) -> bool:
        """Whether ``path`` (in the job's folder) exists, a link not followed."""
        return os.path.lexists(path)

    def requeue(self, src: Path, new_task: TaskName) -> bool:
        """:func:`prsd.spool.claim.requeue`: ``src`` back to pending as ``new_task``."""
        return claim.requeue(self.layout, src, new_task)

    def make_shard(self, shard: str) -> None:
        """The shard's folders in ``pending/``, ``done/`` and ``results/``."""
        for base in (self.layout.pending, self.layout.done, self.layout.results):
            (base / shard).mkdir(parents=True, exist_ok=True)

    def write_task(
        self, task: TaskName, body: TaskBody, *, durable: bool, sync_folder: bool = True
    ) -> None:
        """Publish ``body`` as ``pending/<shard>/<task>``, atomically (fsynced if
        ``durable``: the file before its rename, its folder after it unless
        ``sync_folder`` is False, then :meth:`sync_pending` owes it), in a shard
        :meth:`make_shard` made."""
        path = self.layout.pending_task(task)
        write_atomic(path, body.encode(), durable=durable, sync_folder=sync_folder)

    def sync_pending(self, shards: Iterable[str]) -> None:
        """Flush the folders ``pending/<shard>`` (the renames of tasks written with
        ``sync_folder=False``) to stable storage, once each."""
        for shard in shards:
            fsync_dir(self.layout.pending / shard)

    def read_task(self, path: Path) -> TaskBody:
        """The task file at ``path`` (in ``done/`` or ``claimed/``)."""
        return TaskBody.decode(path.read_bytes())

    def read_result(self, task: TaskName, node_id: str) -> ResultFile | None:
        """The result ``node_id`` committed for ``task``: its metadata and identity."""
        return read_result(self.layout.result(task, node_id))

    def free_seats(self, node_id: str) -> int:
        """Free the job's seats ``node_id`` holds; how many were freed."""
        return seats.free_seats(self.layout, node_id)

    def owner(self) -> JobOwner:
        """:func:`prsd.spool.jobowner.owner`: the recorded owner, fail-closed."""
        return jobowner.owner(self.layout)

    def end(
        self,
        final: FinalState,
        status: JobStatus | None,
        texts: Iterable[tuple[Path, bytes]],
        *,
        on_error: OnError | None = None,
    ) -> None:
        """Write the end of the job in the order of the module docstring; ``status``
        None writes none (a status fenced off by a newer leader).

        Raises:
            OSError: a file could not be written (only without ``on_error``).
        """
        layout = self.layout
        gid = privaterecords.job_gid(layout)
        for path, data in texts:
            self._step(path, functools.partial(write_atomic, path, data), on_error)
        if status is not None:
            self._step(
                layout.status,
                lambda: privaterecords.write_status(layout, status.to_doc(), gid, grant=self.grant),
                on_error,
            )
        self._step(
            layout.final,
            lambda: privaterecords.write_final(layout, final.to_json(), gid, grant=self.grant),
            on_error,
        )
        try:
            self.spool.active_marker(self.job_id).unlink(missing_ok=True)
        except OSError as exc:
            if on_error is None:
                raise
            on_error(self.spool.active_marker(self.job_id), exc)

    def _step(self, path: Path, write: Callable[[], None], on_error: OnError | None) -> None:
        """Make the folders between the job's root and ``path``, then ``write``."""
        try:
            self._make_parents(path)
            write()
        except OSError as exc:
            if on_error is None:
                raise
            on_error(path, exc)

    def _make_parents(self, path: Path) -> None:
        """The folders from the job's root down to ``path``'s (the root itself never).

        Raises:
            FileNotFoundError: the job's folder is gone.
        """
        root = self.layout.root
        if not root.is_dir():
            raise FileNotFoundError(2, "the job's folder is gone", str(root))
        folder = root
        for part in path.parent.relative_to(root).parts:
            folder = folder / part
            folder.mkdir(exist_ok=True)
