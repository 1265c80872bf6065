"""Removing an ended job from the spool (``prsctl gc``), for the leader's request desk.

Invariant: only a job with a final state (``state/final.json``) and no ``active/``
marker is removed, and never while a job not yet ended (a retry, queued or running)
keeps results of it (its ``retry_kept.jsonl`` names the job: the retry reads them at
its end), and only by the leader (root on a deployed spool), after the
request desk checked who asked (:mod:`prsd.leader.requests.askrule`). The job's folder is
first renamed aside to a dot name in ``jobs/`` (``prsctl`` stops listing it at once;
the id stays reserved in ``jobs/.ids``), then deleted in a thread, so a large job
never holds up a leader's round. A folder left aside by a leader that died while
deleting is deleted by the next sweep.

Root never removes a user's files itself: every folder of the job that belongs to
its owner (``code/``, the data submitted with it, ``work/``, ``outputs/``...) is
emptied first by the job's owner side (:mod:`prsd.asowner.removal`, a process with
the owner's ids when the daemons are root), reached from the job's folder one
descriptor at a time without following a link; the daemons then remove their own
files and the names left in their folders. Names are never decoded, so a name that
is not UTF-8 is removed like any other.
"""

from __future__ import annotations

import os
import secrets
import shutil
import threading
from typing import TYPE_CHECKING

from prsd.asowner.side import owner_side
from prsd.errors import PrsdError
from prsd.logconfig import get_logger
from prsd.spool.atomic import move_verified
from prsd.spool.finalrecord import read_final_state
from prsd.spool.jobid import settle_job_id
from prsd.spool.jobowner import OwnerRecordError, owner
from prsd.spool.layout import JobLayout
from prsd.spool.listing import names as listed_names
from prsd.spool.retryrecords import read_kept_text

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.asowner.side import OwnerSide
    from prsd.spool.layout import SpoolLayout

log = get_logger("prsd.leader")

ASIDE_PREFIX = ".removed-"


def remove_ended_job(spool: SpoolLayout, job_id: str) -> tuple[bool, str]:
    """Remove ``job_id``'s folder if it has ended; (removed, one line for the asker).

    Raises:
        OSError: the id could not be marked given or the folder could not be moved
            aside (it is left as it was).
    """
    layout = spool.job(job_id)
    if os.path.lexists(spool.active_marker(job_id)):
        return False, f"job {job_id} is still active: only ended jobs are removed"
    try:
        final = read_final_state(layout)
    except FileNotFoundError:
        return False, f"job {job_id} has not ended: only ended jobs are removed"
    except (ValueError, TypeError) as exc:
        return False, f"job {job_id}: its final state cannot be read ({exc}); not removed"
    keeper = kept_by(spool, job_id)
    if keeper:
        return False, (
            f"job {job_id} is kept by job {keeper}, a retry that has not ended (it reads "
            f"{job_id}'s results at its end); remove it once {keeper} has ended"
        )
    settle_job_id(spool, job_id)  # once the folder is gone, no inbox folder may take the id
    aside = spool.jobs / f"{ASIDE_PREFIX}{job_id}-{secrets.token_hex(4)}"
    if not move_verified(layout.root, aside):
        return False, f"job {job_id} is gone already"
    _delete_in_background(aside)
    log.info("job removed", job_id=job_id, state=final.state, finished_at=final.finished_at)
    return True, f"job {job_id} removed ({final.state}, ended {final.finished_at})"


def kept_by(spool: SpoolLayout, job_id: str) -> str:
    """A job not yet ended (active, or queued in the inbox) that keeps results of
    ``job_id``; "" when there is none. A keep file that cannot be read counts as
    keeping it when it names the job at all."""
    for folder in _unended_folders(spool):
        try:
            text = read_kept_text(JobLayout(folder, folder.name))
        except (OSError, UnicodeDecodeError):
            continue
        if job_id not in text:
            continue
        from prsd.retryplan.kept import read_kept  # only where a keep file names the job

        try:
            if any(k.job == job_id for k in read_kept(folder)):
                return folder.name
        except (PrsdError, OSError):
            return folder.name
    return ""


def _unended_folders(spool: SpoolLayout) -> list[Path]:
    folders: list[Path] = []
    for names, where in ((spool.active, spool.jobs), (spool.inbox, spool.inbox)):
        try:
            listed = listed_names(names)
        except FileNotFoundError:
            continue
        folders.extend(where / n for n in listed if not n.startswith("."))
    return folders


def sweep_aside(spool: SpoolLayout) -> int:
    """Delete the folders a removal left aside (a leader died while deleting); how many."""
    try:
        names = [n for n in listed_names(spool.jobs) if n.startswith(ASIDE_PREFIX)]
    except FileNotFoundError:
        return 0
    for name in names:
        _delete_in_background(spool.jobs / name)
    return len(names)


def _delete_in_background(folder: Path) -> None:
    threading.Thread(
        target=delete_job_folder, args=(folder,), name=f"remove {folder.name}", daemon=True
    ).start()


def delete_job_folder(folder: Path) -> None:
    """Delete a job's folder: the owner's folders by its owner side, then the rest."""
    try:
        who = owner(JobLayout(folder, folder.name))
    except OwnerRecordError:
        who = None  # no owner known: the folder holds the daemons' files only
    if who is not None:
        side = owner_side(who.uid, who.gid)
        try:
            fd = os.open(folder, _DIR)
        except OSError:
            fd = -1
        try:
            if fd >= 0:
                _empty_owned(side, fd, who.uid)
        except (PrsdError, OSError) as exc:
            log.warning("the owner side could not empty a removed job's folders",
                        folder=str(folder), error=str(exc))  # fmt: skip
        finally:
            if fd >= 0:
                os.close(fd)
            side.close()
    shutil.rmtree(os.fsencode(folder), ignore_errors=True)
    if os.path.lexists(folder):
        log.warning("cannot delete all of a removed job's folder", folder=str(folder))


_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _empty_owned(side: OwnerSide, dir_fd: int, uid: int) -> None:
    """Hand every folder of ``uid`` below ``dir_fd`` to the owner side to empty; look
    inside the daemons' own folders for more."""
    for name in listed_names(dir_fd):
        try:
            fd = os.open(name, _DIR, dir_fd=dir_fd)
        except OSError:
            continue  # not a folder (or a link): the daemons unlink the name
        try:
            found = os.fstat(fd).st_uid
            if found == uid:
                side.empty(fd)
            elif found == os.geteuid():
                _empty_owned(side, fd, uid)
        finally:
            os.close(fd)
