"""The containment rules for paths a job names: pure decisions, no file system.

Guarantees (docs/security.md, "Containment"):

- **Confined jobs.** A job is confined when its owner is not the daemons' own user
  (a root agent running a user's job, a service user running others' jobs with
  ``PRSD_RUN_OTHERS_JOBS``). A job the daemons' user runs for itself (``prsd run`` of
  one's own job) is not: its owner's own rights already bound it, so nothing changes.
- **Secure without configuration.** A confined job with no allowed roots configured
  may use only paths inside its job folder; the refusal says how to allow more.
- **Guarded folders.** For a confined job, a path at ``/`` or inside ``/root``,
  ``/etc``, ``/proc``, ``/sys``, ``/dev``, ``/boot`` or another user's home is refused
  unless an allowed root lies at or inside that folder (``/`` as an allowed root
  does not open ``/etc``: it must be named). The job's own folders are exempt: the
  submitted folder is vetted whole (the owner's, not itself guarded), and the spool
  may live anywhere the administrator put it.
- **The spool's own files.** An output inside the spool lands only in the job's own
  folder, never in a name the daemons keep there (``spec.json``, ``state/``, task
  files, ``logs/`` ...); another job's folder and the spool's control folders
  (``leader/``, ``nodes/``, ``active/``, ``inbox/``) are never an output, whatever the
  allowed roots say. A confined job's inputs inside the spool stay in its own folder.

Every function takes resolved absolute paths and returns a reason (a phrase that
completes "<path> ...") or None; callers turn the reason into a JobSpecError.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from prsd.spool.layout import JobLayout

if TYPE_CHECKING:
    from collections.abc import Iterable

SYSTEM_FOLDERS = tuple(
    PurePosixPath(p) for p in ("/", "/root", "/etc", "/proc", "/sys", "/dev", "/boot")
)
"""Folders no confined job reads or writes unless an allowed root names them."""

OTHER_DAEMON_NAMES = frozenset({"job.yml", "requests"})
"""Besides :meth:`prsd.spool.layout.JobLayout.daemon_names`: names in a job's folder
that the daemons own or trust (``job.yml``, the other job file name): never an output."""

ROOTS_HINT = (
    "set PRSD_ALLOWED_ROOTS (folders separated by ':') in /etc/prsd/prsd.env "
    "for the prsd daemons to allow more"
)


def is_confined(owner_uid: int, daemon_uid: int) -> bool:
    """True when the daemons act for someone other than themselves."""
    return owner_uid != daemon_uid


def under(path: PurePosixPath, folder: PurePosixPath) -> bool:
    """True when ``path`` is ``folder`` or inside it (both absolute and resolved)."""
    return path == folder or path.is_relative_to(folder)


def guard_of(path: PurePosixPath, guarded: Iterable[PurePosixPath]) -> PurePosixPath | None:
    """The guarded folder ``path`` is in (``/`` guards only itself), or None."""
    for folder in guarded:
        if folder == PurePosixPath("/"):
            if path == folder:
                return folder
        elif under(path, folder):
            return folder
    return None


def named_by_root(
    path: PurePosixPath, guard: PurePosixPath, roots: Iterable[PurePosixPath]
) -> bool:
    """True when an allowed root holding ``path`` lies at or inside ``guard``."""
    return any(under(path, r) and under(r, guard) for r in roots)


def guard_problem(
    path: PurePosixPath, guarded: Iterable[PurePosixPath], roots: Iterable[PurePosixPath]
) -> str | None:
    """Why a confined job may not use ``path`` (a guarded folder), or None."""
    guard = guard_of(path, guarded)
    if guard is None or named_by_root(path, guard, roots):
        return None
    return (
        f"is in {guard}, a system folder or another user's home; a job run for its owner "
        "may use it only when PRSD_ALLOWED_ROOTS names that folder or one inside it"
    )


def roots_problem(
    path: PurePosixPath,
    roots: tuple[PurePosixPath, ...],
    job_folders: tuple[PurePosixPath, ...],
    *,
    confined: bool,
) -> str | None:
    """Why ``path`` lies outside where the job may go, or None.

    With roots configured the path must be under one of them (or in the job's own
    folders); a confined job without roots only in its job folders; an unconfined
    job without roots anywhere.
    """
    if any(under(path, f) for f in (*roots, *job_folders)):
        return None
    if roots:
        return f"is outside the allowed roots ({', '.join(str(r) for r in roots)})"
    if not confined:
        return None
    return (
        "is outside the job folder: a job run for its owner may use only paths inside "
        f"its job folder while no allowed roots are configured; {ROOTS_HINT}"
    )


def spool_problem(
    path: PurePosixPath, spool: PurePosixPath, job_root: PurePosixPath, *, output: bool
) -> str | None:
    """Why ``path`` inside the spool is not the job's own to use, or None.

    Args:
        path: the resolved path.
        spool: the spool's root folder.
        job_root: the job's folder, ``jobs/<id>/``.
        output: the path is written (the daemons' names are refused too).
    """
    if not under(path, spool):
        return None
    if not under(path, job_root):
        return f"is inside the spool ({spool}) but outside this job's folder ({job_root})"
    if not output:
        return None
    if path == job_root:
        return "is the job's folder itself"
    first = path.relative_to(job_root).parts[0]
    daemons = JobLayout(Path(job_root), Path(job_root).name).daemon_names() | OTHER_DAEMON_NAMES
    if first in daemons or first.startswith("."):
        return (
            f"would write into {first}, which the prsd daemons keep in the job's folder; "
            "write outputs under ./outputs/"
        )
    return None
