"""What the leader does with one request: pure decisions.

Invariant: a request acts on a job only when the rule of
:func:`prsd.spool.askers.may_act` lets its asker (the job's recorded owner, root, or
a member of the admin group). Every other request is answered with a refusal that
names the job's owner, so the asker knows whom to ask. Nothing here reads a file or a
clock; the shell is :mod:`prsd.leader.requests.desk`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from prsd.spool.askers import may_act, who_may

if TYPE_CHECKING:
    from prsd.spool.askers import Person


class JobPlace(Enum):
    """Where the job of a request stands, as the leader sees it."""

    DRIVEN = "driven"  # this leader drives it now
    ENDED = "ended"  # it has a final state
    WAITING = "waiting"  # in the inbox, or taken in but not (yet) driven here
    UNKNOWN = "unknown"  # nowhere in the spool


class Verb(Enum):
    ACT = "act"
    ANSWER = "answer"  # answer and remove the request, doing nothing
    KEEP = "keep"  # leave the request for later (the job is not driven yet)


@dataclass(frozen=True)
class Decision:
    verb: Verb
    ok: bool = False
    message: str = ""


def decide(
    job_id: str,
    action: str,
    place: JobPlace,
    *,
    asker: Person,
    owner: Person | None,
    asker_is_admin: bool,
    ended_state: str = "",
    admin_group: str = "",
) -> Decision:
    """What to do with one request (``owner`` is None while the job has no folder yet)."""
    if place is JobPlace.UNKNOWN:
        return Decision(Verb.ANSWER, False, f"no job {job_id} in the spool")
    if owner is None:
        return Decision(Verb.KEEP)
    if not may_act(asker, owner, asker_is_admin=asker_is_admin):
        return Decision(
            Verb.ANSWER,
            False,
            f"job {job_id} belongs to {owner}: {asker} may not {action} it "
            f"({who_may(admin_group)}); ask {owner.name}",
        )
    if action == "remove":
        return _remove(job_id, place)
    if place is JobPlace.ENDED:
        return Decision(Verb.ANSWER, True, f"job {job_id} already ended: {ended_state}")
    if place is JobPlace.WAITING:
        return Decision(Verb.KEEP)
    return Decision(Verb.ACT, True, f"{_past(action)} by {asker}")


def _remove(job_id: str, place: JobPlace) -> Decision:
    """``prsctl gc``: an ended job is removed; a running or queued one never is."""
    if place is JobPlace.ENDED:
        return Decision(Verb.ACT, True, "removed")
    state = "running" if place is JobPlace.DRIVEN else "queued"
    return Decision(Verb.ANSWER, False, f"job {job_id} is {state}: only ended jobs are removed")


def _past(action: str) -> str:
    return {"cancel": "Canceled"}.get(action, f"{action} done")
