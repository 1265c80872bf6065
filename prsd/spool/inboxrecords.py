"""The leader's records of the inbox: first sightings and refusals.

- ``leader/inbox_seen.json``: when a leader first saw each inbox folder that holds no
  job file yet, ``{"seen": [{"name": N, "ino": I, "since": T}, ...]}`` (``T``: seconds
  since the epoch), so the grace period survives a restart and a take-over
  (prsd/leader/intake/inboxsweep.py). Written whole and atomically by the daemons, mode 0600.
- ``jobs/.refused/<name>.json``: one per refused folder, ``{"inbox_name", "uid", "gid",
  "reason", "moved_to", "at"}`` (``at``: ISO 8601 with a zone); read here for the
  folders past their retention (prsd/leader/intake/refusedgc.py).

- ``inbox/``: :func:`inbox_counts` counts its folders (dot names, links and files left
  out) and those without a job file, for ``prsctl status``; :func:`refusal_documents`
  reads the newest refusal records for it.

Promise: both records are read only as regular files (a link or a special file is
refused), within a size bound, and by the leader only as the daemons' own files;
entries that do not fit are skipped, never guessed. Pure functions besides the reads.

Errors: :func:`read_seen` raises :class:`~prsd.spool.readsafe.UntrustedFile` or
:class:`~prsd.wire.fields.RecordError`; :func:`refusals`, :func:`refusal_documents`
and :func:`inbox_counts` raise nothing (an unreadable record or folder is left out).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from prsd.spool.readsafe import UntrustedFile, read_small
from prsd.wire.fields import Fields, RecordError

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

MAX_SEEN_BYTES = 16 << 20
MAX_RECORD_BYTES = 64 * 1024
RECORD_SUFFIX = ".json"


def read_seen(path: Path) -> dict[tuple[str, int], float]:
    """The first sightings in ``path``: (name, inode) -> seconds since the epoch.

    Raises:
        UntrustedFile: missing, not a regular file of the daemons, or too large.
        RecordError: not a record of first sightings.
    """
    doc = Fields.of_json(read_small(path, MAX_SEEN_BYTES, daemon_owned=True), str(path))
    found: dict[tuple[str, int], float] = {}
    for entry in doc.get("seen", list):
        try:
            f = Fields(entry, str(path))
            found[(f.get("name", str), f.get("ino", int))] = f.get("since", float)
        except RecordError:
            continue
    return found


def seen_bytes(first_seen: dict[tuple[str, int], float]) -> bytes:
    """The record :func:`read_seen` reads back (pure)."""
    seen = [{"name": n, "ino": i, "since": t} for (n, i), t in sorted(first_seen.items())]
    return json.dumps({"seen": seen}).encode()


@dataclass(frozen=True)
class Refusal:
    """A refused folder's record: ``aside`` (its name in ``jobs/.refused/``), when it was
    refused (seconds since the epoch), and its owner's uid and gid (None: not recorded)."""

    aside: str
    at: float
    uid: int
    gid: int | None


def _record_names(folder: Path) -> list[str]:
    try:
        return sorted(n for n in os.listdir(folder) if n.endswith(RECORD_SUFFIX))
    except OSError:
        return []


def refusal_documents(folder: Path, newest: int) -> tuple[int, list[dict[str, Any]]]:
    """How many refusal records ``folder`` (``jobs/.refused/``) holds, and the ``newest``
    of them by name (newest first) that this user can read, as written."""
    names = _record_names(folder)
    docs = []
    for name in names[::-1][:newest]:
        try:
            doc = json.loads(read_small(folder / name, MAX_RECORD_BYTES, daemon_owned=False))
        except (UntrustedFile, ValueError):
            continue
        if isinstance(doc, dict):
            docs.append(doc)
    return len(names), docs


def inbox_counts(inbox: Path, job_files: Iterable[str]) -> tuple[int, int]:
    """The folders in ``inbox`` (dot names, links and files left out), and how many of
    them hold none of ``job_files`` (the job file's names) yet."""
    names = tuple(job_files)
    folders = without = 0
    try:
        with os.scandir(inbox) as listing:
            for e in listing:
                if e.name.startswith(".") or not e.is_dir(follow_symlinks=False):
                    continue
                folders += 1
                if not any(os.path.lexists(os.path.join(e.path, n)) for n in names):
                    without += 1
    except OSError:
        pass
    return folders, without


def refusals(folder: Path) -> list[Refusal]:
    """The readable refusal records in ``folder`` (``jobs/.refused/``), by name."""
    found = []
    for name in _record_names(folder):
        try:
            f = Fields.of_json(read_small(folder / name, MAX_RECORD_BYTES, daemon_owned=True), name)
            at = datetime.fromisoformat(f.get("at", str)).timestamp()
            gid = f.get("gid", int, type(None), default=None)
            found.append(Refusal(name.removesuffix(RECORD_SUFFIX), at, f.get("uid", int), gid))
        except (UntrustedFile, ValueError):  # RecordError, or a time that is not one
            continue
    return found
