"""Removing an ended job from the spool (``prsctl gc``), for the leader's request desk.

Invariant: only a job with a final state (``state/final.json``) and no ``active/``
marker is removed, and never while a job not yet ended (a retry, queued or running)
keeps results of it (its ``retry_kept.jsonl`` names the job: the retry reads them at
its end), and only by the leader (root on a deployed spool), after the
request desk checked who asked (:mod:`prsd.leader.askrule`). The job's folder is
first renamed aside to a dot name in ``jobs/`` (``prsctl`` stops listing it at once;
the id stays reserved in ``jobs/.ids``), then deleted in a thread, so a large job
never holds up a leader's round. A folder left aside by a leader that died while
deleting is deleted by the next sweep.
"""

from __future__ import annotations

import os
import secrets
import shutil
import threading
from typing import TYPE_CHECKING

from prsd.errors import PrsdError
from prsd.leader.finish import FinalState
from prsd.leader.kept import read_kept
from prsd.leader.retryfiles import KEPT_FILE
from prsd.logconfig import get_logger
from prsd.storage.atomic import move_verified
from prsd.storage.jobid import settle_job_id

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.storage.layout import SpoolLayout

log = get_logger("prsd.leader")

ASIDE_PREFIX = ".removed-"
MAX_FINAL_BYTES = 1 << 20


def remove_ended_job(spool: SpoolLayout, job_id: str) -> tuple[bool, str]:
    """Remove ``job_id``'s folder if it has ended; (removed, one line for the asker).

    Raises:
        OSError: the id could not be marked given or the folder could not be moved
            aside (it is left as it was).
    """
    layout = spool.job(job_id)
    if os.path.lexists(spool.active / job_id):
        return False, f"job {job_id} is still active: only ended jobs are removed"
    try:
        with open(layout.final, "rb") as f:
            final = FinalState.from_json(f.read(MAX_FINAL_BYTES))
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
            text = (folder / KEPT_FILE).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if job_id not in text:
            continue
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
            listed = os.listdir(names)
        except FileNotFoundError:
            continue
        folders.extend(where / n for n in listed if not n.startswith("."))
    return folders


def sweep_aside(spool: SpoolLayout) -> int:
    """Delete the folders a removal left aside (a leader died while deleting); how many."""
    try:
        names = [n for n in os.listdir(spool.jobs) if n.startswith(ASIDE_PREFIX)]
    except FileNotFoundError:
        return 0
    for name in names:
        _delete_in_background(spool.jobs / name)
    return len(names)


def _delete_in_background(folder: Path) -> None:
    def delete() -> None:
        shutil.rmtree(folder, ignore_errors=True)
        if os.path.lexists(folder):
            log.warning("cannot delete all of a removed job's folder", folder=str(folder))

    threading.Thread(target=delete, name=f"remove {folder.name}", daemon=True).start()
