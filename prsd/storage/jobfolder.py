"""One job's folder as the leader ends it: the one end-of-job writer.

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

Errors: :meth:`JobFolder.end` raises the first ``OSError`` (nothing after it is
written), unless ``on_error`` is given: then each file that cannot be written is
passed to it and the others are still written (a job failed by a fault says as much
as its folder still allows).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from prsd.storage import privaterecords
from prsd.storage.atomic import write_atomic
from prsd.storage.layout import SpoolLayout

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from pathlib import Path

    from prsd.storage.layout import JobLayout
    from prsd.wire.final import FinalState

    OnError = Callable[[Path, OSError], None]

__all__ = ["JobFolder"]


def _no_grant(fd: int) -> None:
    """Nobody beyond the job's group."""


class JobFolder:
    """The folder ``jobs/<job_id>`` of ``spool``; ``grant`` is handed each private
    record's descriptor (see prsd/storage/privaterecords.py)."""

    def __init__(
        self, spool: SpoolLayout, job_id: str, *, grant: Callable[[int], None] = _no_grant
    ) -> None:
        self.spool = spool
        self.job_id = job_id
        self.layout = spool.job(job_id)
        self.grant = grant

    @classmethod
    def of(cls, layout: JobLayout, *, grant: Callable[[int], None] = _no_grant) -> JobFolder:
        """The folder of ``layout`` (a job folder lies in its spool's ``jobs/``)."""
        return cls(SpoolLayout(layout.root.parent.parent), layout.job_id, grant=grant)

    def end(
        self,
        final: FinalState,
        status: dict[str, Any] | None,
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
                lambda: privaterecords.write_status(layout, status, gid, grant=self.grant),
                on_error,
            )
        self._step(
            layout.final,
            lambda: privaterecords.write_final(layout, final.to_json(), gid, grant=self.grant),
            on_error,
        )
        try:
            (self.spool.active / self.job_id).unlink(missing_ok=True)
        except OSError as exc:
            if on_error is None:
                raise
            on_error(self.spool.active / self.job_id, exc)

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
