"""``prsctl gc --older-than DAYS``: remove ended jobs older than that from the spool.

prsctl chooses (:func:`old_jobs`, pure): jobs with a final state (Completed,
Completed with failures, Failed, Canceled) that ended more than DAYS days ago, by
their ``finished_at``; a user's own jobs, or every job for root and members of
``PRSD_ADMIN_GROUP``. Each goes to the leader as a ``remove`` request in
``requests/``, as ``cancel`` does: the leader checks the asker against the job's
owner again and removes only ended jobs (:mod:`prsd.leader.requests.removal`).

The caller's refused inbox folders (``jobs/.refused/``, moved aside by the leader:
prsd/leader/intake/inboxsweep.py) refused more than DAYS days ago go too (every user's for
root and the admin group): each is a ``discard`` request, and the leader removes the
folder's content with its owner's ids (the owner side, prsd/leader/intake/refusedgc.py),
then the emptied folder and its record. ``--dry-run`` lists what would go and asks
nothing.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from prsd.cli import console
from prsd.errors import ExitCode, PrsdError, SpoolError
from prsd.read.jobs import ENDED, job_ids
from prsd.spool.inboxrecords import Refusal, refusals

if TYPE_CHECKING:
    import argparse

    from prsd.spool.layout import SpoolLayout
    from prsd.spool.requests import Request

POLL_S = 0.1
DAY_S = 86400.0


@dataclass(frozen=True)
class Ended:
    """A job with a final state, as prsctl read it."""

    job_id: str
    state: str
    finished_at: str
    owner_uid: int | None  # None: unknown (the leader decides)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    g = sub.add_parser(
        "gc", help="remove ended jobs and refused inbox folders older than DAYS days"
    )
    g.add_argument("--older-than", type=float, required=True, metavar="DAYS")
    g.add_argument("--dry-run", action="store_true", help="list what would be removed")
    g.add_argument("--wait", type=float, default=30.0, help="seconds to wait for the leader")
    return g


def age_days(finished_at: str, now: datetime) -> float | None:
    """Days since an ISO time; None when it cannot be read."""
    try:
        then = datetime.fromisoformat(finished_at)
    except ValueError:
        return None
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    return (now - then).total_seconds() / DAY_S


def old_jobs(
    jobs: list[Ended], older_than_days: float, now: datetime, *, uid: int, admin: bool
) -> tuple[list[tuple[Ended, float]], int]:
    """(the jobs to remove with their age in days, how many others' old jobs were left)."""
    chosen: list[tuple[Ended, float]] = []
    others = 0
    for job in jobs:
        age = age_days(job.finished_at, now)
        if job.state not in ENDED or age is None or age < older_than_days:
            continue
        if admin or uid == 0 or job.owner_uid == uid:
            chosen.append((job, age))
        else:
            others += 1
    return chosen, others


def cmd_gc(spool: SpoolLayout, args: argparse.Namespace) -> int:
    if args.older_than < 0:
        raise PrsdError("--older-than DAYS must be 0 or more")
    uid = os.getuid()
    admin = uid == 0 or _is_admin(uid)
    now = datetime.now(UTC)
    chosen, others = old_jobs(read_ended(spool), args.older_than, now, uid=uid, admin=admin)
    folders, others_folders = old_refusals(
        refusals(spool.refused), args.older_than, now.timestamp(), uid=uid, admin=admin
    )
    left = [
        f"{n} {what}"
        for n, what in ((others, "ended jobs"), (others_folders, "refused inbox folders"))
        if n
    ]
    if left:
        console.warn(
            f"{' and '.join(left)} of other users left (only their owners, root or members "
            "of PRSD_ADMIN_GROUP may remove them)"
        )
    if not chosen and not folders:
        whose = "" if admin else " of yours"
        console.say(f"nothing to remove: no ended job{whose} older than {args.older_than:g} days")
        return ExitCode.OK
    if args.dry_run:
        for job, age in chosen:
            console.say(f"would remove {job.job_id} ({job.state}, ended {age:.1f} days ago)")
        for refusal, age in folders:
            console.say(
                f"would remove refused inbox folder {refusal.aside} (jobs/.refused/, of uid "
                f"{refusal.uid}, refused {age:.1f} days ago)"
            )
        return ExitCode.OK
    asks = [(job.job_id, "remove") for job, _ in chosen]
    asks += [(refusal.aside, "discard") for refusal, _ in folders]
    return _remove(spool, asks, args.wait)


def old_refusals(
    found: list[Refusal], older_than_days: float, now: float, *, uid: int, admin: bool
) -> tuple[list[tuple[Refusal, float]], int]:
    """(the refused folders to remove with their age in days, how many others' were left)."""
    chosen: list[tuple[Refusal, float]] = []
    others = 0
    for refusal in found:
        age = (now - refusal.at) / DAY_S
        if age < older_than_days:
            continue
        if admin or uid == 0 or refusal.uid == uid:
            chosen.append((refusal, age))
        else:
            others += 1
    return chosen, others


def read_ended(spool: SpoolLayout) -> list[Ended]:
    """Every job of the spool with a readable final state."""
    from prsd.spool.askers import job_owner
    from prsd.spool.finalrecord import read_final_state

    found = []
    for job_id in job_ids(spool):
        try:
            final = read_final_state(spool.job(job_id))
        except (OSError, ValueError, TypeError):
            continue
        owner = job_owner(spool, job_id)
        found.append(Ended(job_id, final.state, final.finished_at, owner.uid if owner else None))
    return found


def _is_admin(uid: int) -> bool:
    from prsd.settings import setting
    from prsd.spool.askers import ADMIN_GROUP_ENV, in_group

    group = setting(ADMIN_GROUP_ENV)
    return group is not None and in_group(uid, group.value)


def _remove(spool: SpoolLayout, asks: list[tuple[str, str]], wait_s: float) -> int:
    """Send each (name, action) request; print the leader's answers as they come."""
    from prsd.read.fleet import fleet_warning, read_fleet
    from prsd.spool.requests import read_reply, send_request

    if not spool.requests.is_dir():
        raise SpoolError(f"{spool.requests} is missing: the daemons create it when they start")
    sent: dict[str, Request] = {name: send_request(spool, name, action) for name, action in asks}
    down = fleet_warning(read_fleet(spool, datetime.now(UTC)), f"{len(sent)} removals requested")
    if down is not None and "leader" in down:
        console.say(f"{down}: the requests wait for a leader")
        return ExitCode.OK
    code = ExitCode.OK
    deadline = time.monotonic() + wait_s
    while sent and time.monotonic() < deadline:
        for name, request in list(sent.items()):
            reply = read_reply(spool, request)
            if reply is None:
                continue
            del sent[name]
            if reply.ok:
                console.say(reply.message)
            else:
                console.error(reply.message)
                code = ExitCode.CONFIG
        if sent:
            time.sleep(POLL_S)
    for name in sent:
        console.say(
            f"removal of {name} requested; the leader has not answered within {wait_s:.0f} s"
        )
    return code
