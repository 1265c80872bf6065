"""One pipeline's folder (``pipelines/<id>/``): every read and write of its files.

:class:`PipelineFolder` is the folder by its layout (prsd/spool/pipelinelayout.py):
the submitter's record (prsd/spool/pipelinerecord.py), the leader's ``state.json``
(prsd/spool/pipelinestate.py), the pipeline's end (``final.json``, a
:class:`prsd.spool.finalrecord.FinalState`), the cancel mark and the steps still waiting in
``steps/``. :meth:`PipelineFolder.open` gives the leader's side,
:class:`OpenPipelineFolder`.

Promise: the folder belongs to the user who submitted it, who may rename or replace
anything in it at any time. Nothing here follows a link at a file's name; the leader
(perhaps root) opens the folder once with :func:`prsd.spool.dirfd.open_under` (no
link followed), takes its owner from the open descriptor, and writes (``state.json``,
``logs/job_result.txt``, ``final.json``) and moves steps out of ``steps/`` only
relative to descriptors: a link the user plants (the folder itself, ``logs``,
``steps``, a file name) is refused or replaced, never followed, so nothing the leader
writes lands outside the user's own folder. A ``state.json`` the daemons did not
write, or one that cannot be read, reads as no decision yet; a ``final.json`` that
cannot be read reads as no end yet.

Errors: :meth:`PipelineFolder.record` raises
:class:`prsd.spool.badrecord.BadRecord`; :meth:`PipelineFolder.open` raises
:class:`prsd.spool.dirfd.UnsafeFolder`; the writes raise ``OSError``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from typing import TYPE_CHECKING, Self

from prsd.spool.atomic import move_out_verified, rename_at
from prsd.spool.badrecord import BadRecord
from prsd.spool.dirfd import open_under
from prsd.spool.finalrecord import FinalState
from prsd.spool.pipelinelayout import PIPELINE_FINAL, PIPELINE_STATE, PIPELINE_STEPS
from prsd.spool.pipelinerecord import read_record
from prsd.spool.pipelinestate import PipelineState
from prsd.spool.readsafe import UntrustedFile, read_small
from prsd.wire.fields import RecordError

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.spool.layout import SpoolLayout
    from prsd.spool.pipelinerecord import PipelineRecord

__all__ = ["MAX_STATE_BYTES", "OpenPipelineFolder", "PipelineFolder"]

MAX_STATE_BYTES = 1 << 20


class PipelineFolder:
    """``pipelines/<pipeline_id>/`` of ``spool``, by name (nothing is opened here)."""

    def __init__(self, spool: SpoolLayout, pipeline_id: str) -> None:
        self.spool = spool
        self.pipeline_id = pipeline_id
        self.layout = spool.pipeline(pipeline_id)

    @property
    def root(self) -> Path:
        return self.layout.root

    def exists(self) -> bool:
        """Whether the folder is there (a link counts: it is refused when opened)."""
        return os.path.lexists(self.layout.root)

    def record(self) -> PipelineRecord:
        """What the submitter wrote (``pipeline.json``).

        Raises:
            BadRecord: missing, a link, too large, or malformed.
        """
        return read_record(self.layout.root)

    def state(self) -> PipelineState:
        """The leader's own record (skips, cancel); an empty one when there is none yet
        or it cannot be believed (not the daemons', a link, malformed)."""
        try:
            raw = read_small(self.layout.state, MAX_STATE_BYTES, daemon_owned=True)
            return PipelineState.from_json(raw)
        except (OSError, UntrustedFile, BadRecord):
            return PipelineState()

    def final(self) -> FinalState | None:
        """How the pipeline ended; None before it has (or while ``final.json`` cannot
        be read as one)."""
        try:
            return FinalState.from_json(
                read_small(self.layout.final, MAX_STATE_BYTES, daemon_owned=False)
            )
        except (OSError, UntrustedFile, RecordError):
            return None

    def ended(self) -> bool:
        """Whether the leader wrote ``final.json`` (its last write of the pipeline)."""
        return os.path.lexists(self.layout.final)

    def cancel_asked(self) -> bool:
        """Whether the submitter asked for a cancel (the ``cancel`` mark)."""
        return os.path.lexists(self.layout.cancel)

    def ask_cancel(self) -> None:
        """Place the cancel mark (``prsctl cancel``, Ctrl-C of ``prsd run``).

        Raises:
            OSError: the folder is gone or not this user's to write.
        """
        self.layout.cancel.touch()

    def withdraw_cancel(self) -> None:
        """Take back a cancel mark no leader acted on (the pipeline has not ended)."""
        if not self.ended():
            with contextlib.suppress(FileNotFoundError):
                self.layout.cancel.unlink()

    def waiting(self, step: str) -> bool:
        """Whether ``steps/<step>/`` is still here (the step not released yet)."""
        return os.path.lexists(self.layout.step(step))

    def owner_uid(self) -> int:
        """The uid owning the folder, read without following a link; -1 (nobody's jobs
        match) if it cannot be read."""
        try:
            return os.lstat(self.layout.root).st_uid
        except OSError:
            return -1

    def open(self) -> OpenPipelineFolder:
        """The folder opened for the leader's writes (use as a context manager).

        Raises:
            UnsafeFolder: it is a link, not a folder, or missing.
        """
        return OpenPipelineFolder(self.spool, self.pipeline_id)


class OpenPipelineFolder:
    """``pipelines/<id>/``, open (use as a context manager): the leader's writes."""

    def __init__(self, spool: SpoolLayout, pipeline_id: str) -> None:
        """Open the folder.

        Raises:
            UnsafeFolder: it is a link, not a folder, or missing.
        """
        self.anchor = spool.pipelines
        self.pipeline_id = pipeline_id
        self.fd = open_under(self.anchor, [pipeline_id])
        self.owner_uid = os.fstat(self.fd).st_uid

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        os.close(self.fd)

    def write_state(self, state: PipelineState) -> None:
        """Replace ``state.json``."""
        self.write(PIPELINE_STATE, state.to_json())

    def write_final(self, final: FinalState) -> None:
        """Write ``final.json`` (the pipeline's last write)."""
        self.write(PIPELINE_FINAL, final.to_json())

    def write(self, name: str, data: bytes, *, sub: str = "") -> None:
        """Write ``[sub/]name`` whole (aside, then renamed over the old one)."""
        fd = open_under(self.anchor, [self.pipeline_id, sub], create_mode=0o755) if sub else self.fd
        try:
            tmp = f".{name}.{secrets.token_hex(4)}.tmp"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
            out = os.open(tmp, flags, 0o644, dir_fd=fd)
            try:
                os.write(out, data)
                os.fsync(out)
            finally:
                os.close(out)
            rename_at(tmp, name, fd)
        finally:
            if fd != self.fd:
                os.close(fd)

    def move_step(self, step: str, target: Path) -> bool:
        """Move ``steps/<step>`` to ``target`` (the inbox); True if it moved."""
        steps = open_under(self.anchor, [self.pipeline_id, PIPELINE_STEPS])
        try:
            return move_out_verified(steps, step, target)
        finally:
            os.close(steps)
