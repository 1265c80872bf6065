"""A pipeline's folder as the leader touches it: opened once, never through a link.

The folder (``pipelines/<id>/``) belongs to the user who submitted it, who may rename
or replace anything in it at any time. The leader, perhaps root, therefore opens it
with :func:`prsd.storage.dirfd.open_under` (no link followed), takes its owner from the
open descriptor, and writes (``state.json``, ``logs/job_result.txt``, ``final.json``)
and moves steps out of ``steps/`` only relative to descriptors: a link the user plants
(the folder itself, ``logs``, ``steps``, a file name) is refused or replaced, never
followed, so nothing the leader writes lands outside the user's own folder.
"""

from __future__ import annotations

import os
import secrets
from typing import TYPE_CHECKING, Self

from prsd.storage.atomic import move_out_verified, rename_at
from prsd.storage.dirfd import open_under
from prsd.storage.pipelinelayout import PIPELINE_STEPS

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.storage.layout import SpoolLayout


class PipelineFolder:
    """``pipelines/<id>/``, open (use as a context manager)."""

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
