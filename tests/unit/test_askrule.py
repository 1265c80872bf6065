"""Who may act on a job, and what the leader does with one request (pure rules)."""

from __future__ import annotations

import pytest

from prsd.leader.requests.askrule import Decision, JobPlace, Verb, decide
from prsd.leader.requests.desk import take_turn
from prsd.spool.askers import Person, may_act

ALICE = Person(1001, "alice")
BOB = Person(1002, "bob")
ROOT = Person(0, "root")


@pytest.mark.parametrize(
    ("asker", "admin", "allowed"),
    [(ALICE, False, True), (BOB, False, False), (ROOT, False, True), (BOB, True, True)],
)
def test_owner_root_and_admins_may_act(asker: Person, admin: bool, allowed: bool) -> None:
    """The owner, root and admin-group members may act on alice's job; bob may not."""
    assert may_act(asker, ALICE, asker_is_admin=admin) is allowed


def _decide(place: JobPlace, asker: Person, owner: Person | None = ALICE, **kw: str) -> Decision:
    return decide("j1", "cancel", place, asker=asker, owner=owner, asker_is_admin=False, **kw)


def test_a_stranger_is_refused_with_the_owner_named() -> None:
    """bob's cancel of alice's job: answered, not done, naming alice and whom to ask."""
    d = _decide(JobPlace.DRIVEN, BOB, admin_group="prsd-admins")
    assert (d.verb, d.ok) == (Verb.ANSWER, False)
    assert d.message == (
        "job j1 belongs to alice (uid 1001): bob (uid 1002) may not cancel it (only its "
        "owner, root or members of group prsd-admins); ask alice"
    )


@pytest.mark.parametrize("place", [JobPlace.DRIVEN, JobPlace.WAITING, JobPlace.ENDED])
def test_a_stranger_is_refused_wherever_the_job_is(place: JobPlace) -> None:
    """A refusal does not wait for the job to be taken in, nor says whether it ended."""
    d = _decide(place, BOB, ended_state="Completed")
    assert (d.verb, d.ok) == (Verb.ANSWER, False)
    assert "Completed" not in d.message


@pytest.mark.parametrize(
    ("place", "asker", "verb", "message"),
    [
        (JobPlace.DRIVEN, ALICE, Verb.ACT, "Canceled by alice (uid 1001)"),
        (JobPlace.DRIVEN, ROOT, Verb.ACT, "Canceled by root (uid 0)"),
        (JobPlace.WAITING, ALICE, Verb.KEEP, ""),
        (JobPlace.ENDED, ALICE, Verb.ANSWER, "job j1 already ended: Failed"),
        (JobPlace.UNKNOWN, ALICE, Verb.ANSWER, "no job j1 in the spool"),
    ],
)
def test_the_owner_is_served_where_the_job_is(
    place: JobPlace, asker: Person, verb: Verb, message: str
) -> None:
    """Driven: act (recording who asked); queued: wait for intake; ended or unknown: answer."""
    d = _decide(place, asker, ended_state="Failed")
    assert (d.verb, d.message) == (verb, message)


def test_a_job_without_a_folder_yet_waits() -> None:
    """No owner known yet (the folder is being moved in): keep the request."""
    assert _decide(JobPlace.WAITING, BOB, owner=None).verb is Verb.KEEP


def test_every_request_gets_its_turn() -> None:
    """A pile of waiting requests cannot starve the ones after it: the window wraps around."""
    names = [f"r{i}" for i in range(5)]
    seen: list[str] = []
    cursor = 0
    for _ in range(3):
        batch, cursor = take_turn(names, cursor, 2)
        assert len(batch) == 2
        seen += batch
    assert set(seen) == set(names)
    assert take_turn(names[:2], 7, 2) == (names[:2], 0)
