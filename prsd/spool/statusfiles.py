"""A job's ``state/status.json`` and ``state/final.json`` as the clients read them.

Promise: :func:`read_status_document` and :func:`read_final_document` are the clients'
(``prsctl``, the read API, ``prsd report``) one way to read these two files, and
:func:`merged_with_private_file` the one way to add the job's error text from
``state/status.private.json`` where this user may read it: each answers the decoded
JSON object, or None where there is none to show yet (no file, a file being replaced,
one that is not a JSON object), so a caller decides what None means (Queued,
Starting, not ended). The final record is read from its private copy (with the
reason) where this user may read it, else from ``final.json``.
:func:`status_mark` is the leader's look at the ``(epoch, seq)`` of the status on
disk, to refuse writing over a newer one. The documents' contract is
prsd/spool/statusschema.py and prsd/spool/finalrecord.py; the daemons' own typed reads are
prsd/spool/statusrecord.py and prsd/spool/privaterecords.py.

Errors: :func:`read_status_document` raises ``OSError`` when ``status.json`` cannot be
read (``PermissionError``: this user may not; the caller says so); nothing else raises.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prsd.spool.finalrecord import private_final_path
from prsd.spool.statusschema import PRIVATE_STATUS, with_private

if TYPE_CHECKING:
    from prsd.spool.layout import JobLayout

__all__ = [
    "merged_with_private_file",
    "read_final_document",
    "read_status_document",
    "status_mark",
]

MAX_PRIVATE_BYTES = 16 * 1024 * 1024


def _document(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``; None when it is missing, torn or no object.

    Raises:
        OSError: it cannot be read (``PermissionError``: it may not be).
    """
    try:
        doc = json.loads(path.read_bytes())
    except (FileNotFoundError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def read_status_document(layout: JobLayout) -> dict[str, Any] | None:
    """``state/status.json`` as written; None before the leader wrote one (or while it
    is being replaced over SMB).

    Raises:
        OSError: it cannot be read (``PermissionError``: this user may not).
    """
    return _document(layout.status)


def read_final_document(layout: JobLayout) -> dict[str, Any] | None:
    """The job's final record (its private copy, with the reason, where this user may
    read it); None before the job has ended."""
    for candidate in (Path(private_final_path(str(layout.final))), layout.final):
        try:
            doc = _document(candidate)
        except OSError:
            continue
        if doc is not None:
            return doc
    return None


def status_mark(layout: JobLayout) -> tuple[int, int] | None:
    """The ``(epoch, seq)`` of the status on disk; None when there is none to read."""
    try:
        doc = _document(layout.status)
        if doc is None:
            return None
        return int(doc.get("epoch", 0)), int(doc.get("seq", 0))
    except (OSError, ValueError, TypeError):
        return None


def merged_with_private_file(
    public: dict[str, Any], state_dir: str | os.PathLike[str]
) -> dict[str, Any]:
    """``public`` with ``state_dir/status.private.json`` merged in when this user may
    read it (:func:`prsd.spool.statusschema.with_private`)."""
    try:
        with open(os.path.join(state_dir, PRIVATE_STATUS), "rb") as f:
            private = json.loads(f.read(MAX_PRIVATE_BYTES))
    except (OSError, ValueError):
        return public  # another user's job, or written by an older leader
    return with_private(public, private)
