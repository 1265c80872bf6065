"""Opening a spool: make sure its top folders exist, and find its jobs and their states.

Errors: :func:`open_spool` raises :class:`prsd.errors.SpoolError`; the listings raise
``OSError`` but for a missing folder (no jobs).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from prsd.errors import SpoolError
from prsd.spool.layout import SpoolLayout, valid_job_id

if TYPE_CHECKING:
    from pathlib import Path


def open_spool(root: Path, *, create: bool = True) -> SpoolLayout:
    """The layout of the spool at ``root``, creating its folders when asked.

    ``create=False`` is for readers (``prsctl status``, ``nodes``): they need only a
    spool, not a writable one, so a read-only share can still be looked at.

    Raises:
        SpoolError: the spool does not exist (``create=False``) or, when creating,
            is not writable by this user.
    """
    layout = SpoolLayout(root.absolute())
    if not create:
        if not layout.jobs.is_dir():
            raise SpoolError(f"{root} is not a prsd spool (no jobs/ folder)")
        return layout
    try:
        for d in layout.top_dirs():
            d.mkdir(parents=True, exist_ok=True)
        _make_requests_folder(layout)
    except OSError as exc:
        raise SpoolError(f"cannot create the spool folders in {root}: {exc.strerror}") from exc
    # The inbox is the one folder every user writes (submissions); on a shared spool
    # jobs/ and the rest belong to the daemons, whose start-up check tests them.
    if not os.access(layout.inbox, os.W_OK):
        raise SpoolError(f"the spool {root} is not writable by this user")
    return layout


def _make_requests_folder(layout: SpoolLayout) -> None:
    """``requests/``: 1777 like a sticky inbox, so every user may ask about their own jobs."""
    try:
        layout.requests.mkdir()
    except FileExistsError:
        return  # kept as it is: ``prsd doctor`` checks its mode
    except PermissionError:
        return  # a user's prsctl on a spool made before requests/: the daemons make it
    os.chmod(layout.requests, 0o1777)


def active_jobs(spool: SpoolLayout) -> list[str]:
    """Ids of the jobs marked active (``active/<id>``), in id order."""
    try:
        names = os.listdir(spool.active)
    except FileNotFoundError:
        return []
    return sorted(n for n in names if valid_job_id(n))


def stranded_jobs(spool: SpoolLayout) -> list[str]:
    """Jobs taken in from the inbox whose leader died before marking them active.

    Intake moves ``inbox/<name>`` to ``jobs/<id>``, seals it, writes its spec, and only
    then writes ``active/<id>``; a leader killed in between leaves a job folder that is
    neither active nor ended (no ``state/final.json``), which nobody would ever drive.
    One ``stat`` per job folder: read when a leader takes office, not on every step.
    """
    active = set(active_jobs(spool))
    try:
        names = os.listdir(spool.jobs)
    except FileNotFoundError:
        return []
    return sorted(
        n
        for n in names
        if valid_job_id(n) and n not in active and not os.path.lexists(spool.job(n).final)
    )


def submitted_jobs(spool: SpoolLayout) -> set[str]:
    """The ids of every job folder, taken in (``jobs/``) or waiting in ``inbox/``: real
    folders with a job id's name (a link or a file in the inbox is no job: the leader
    removes it)."""
    ids: set[str] = set()
    for folder in (spool.jobs, spool.inbox):
        try:
            with os.scandir(folder) as listing:
                names = [e.name for e in listing if e.is_dir(follow_symlinks=False)]
        except FileNotFoundError:
            continue
        ids.update(n for n in names if valid_job_id(n))
    return ids
