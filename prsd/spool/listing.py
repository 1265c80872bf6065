"""Listing a folder: the one place outside the spool's own readers that asks the kernel
for a directory's entries.

Every module of prsd that lists a folder does it here: the spool's folders
(``jobs/``, ``active/``, ``inbox/``, a job's ``pending/`` shards, its log tree), and
the folders that are not the spool's but are listed on the same terms (a user's
input folder listed on the owner's side, a code folder being copied, a folder of
interpreters, the doctor's scratch pool). A test bans ``os.listdir`` and
``os.scandir`` in every other module outside ``prsd/spool`` and ``prsd/worker``.

Promise:
- :func:`listing`: the names, sorted, dot names (the write-aside ``.tmp-`` files, a
  submission's ``.submit-`` staging folder) left out; a missing folder is empty.
- :func:`names`: every name exactly as the kernel lists it, in its order, dot names
  included; the folder given by path or by an open descriptor (the names of a
  folder reached without following a link).
- :func:`scan`: the folder's entries one by one as ``os.DirEntry`` (each with the
  kind the listing itself reports, so no ``stat`` per entry), in the kernel's order,
  dot names included; a folder of a million names is never held as a million entries.
  The folder is opened when the first entry is asked for, closed after the last.

Nothing is filtered but what :func:`listing` says, nothing sorted but its names.

Errors: ``OSError`` from the kernel as it came (``FileNotFoundError``,
``NotADirectoryError``, ``PermissionError``), but for a missing folder in
:func:`listing`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


def listing(folder: Path) -> list[str]:
    """The names in ``folder``, sorted, dot names left out; [] when it does not exist.

    Raises:
        OSError: it cannot be listed (but for a missing folder).
    """
    try:
        found = os.listdir(folder)
    except FileNotFoundError:
        return []
    return sorted(n for n in found if not n.startswith("."))


def names(folder: Path | str | int) -> list[str]:
    """Every name in ``folder`` (a path, or a descriptor open on it), as listed.

    Raises:
        OSError: it cannot be listed (a missing folder included).
    """
    return os.listdir(folder)


def scan(folder: Path | str) -> Iterator[os.DirEntry[str]]:
    """The entries of ``folder``, as listed (the folder is closed after the last).

    Raises:
        OSError: at the first entry asked for, when it cannot be listed.
    """
    with os.scandir(folder) as entries:
        yield from entries
