"""The pure parts of the command line: progress lines, drained nodes, the reason a
script without ``run()`` gives, and what ``prsctl gc`` chooses and the leader allows."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from prsd.cli.gc import Ended, old_jobs
from prsd.cli.runview import progress_line
from prsd.leader.requests.askrule import JobPlace, Verb, decide
from prsd.leader.run.initrule import NodeInit, init_failure
from prsd.read.nodes import node_row
from prsd.spool.askers import Person
from prsd.spool.heartbeatrecord import Heartbeat
from prsd.spool.initrecords import InitError

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def test_progress_line_with_a_known_total() -> None:
    doc = {
        "state": "Running",
        "succeeded_mbs": 3,
        "failed_mbs": 1,
        "total_mbs": 16,
        "elapsed_s": 65.2,
        "eta_s": 195.0,
    }
    assert progress_line(doc) == (
        "Running: 4 of 16 mini-batches (25%), 1 failed, elapsed 0:01:05, ETA 0:03:15"
    )


def test_progress_line_while_splitting_and_before_any_summary() -> None:
    splitting = {"state": "Running", "succeeded_mbs": 2, "planned_mbs": 40, "total_mbs": None}
    assert progress_line(splitting) == "Running: 2 of 40+ mini-batches, 0 failed"
    assert progress_line({"state": "Queued"}) == "Queued: 0 mini-batches, 0 failed"


def test_progress_line_of_an_ended_job_has_no_eta() -> None:
    doc = {"state": "Completed", "succeeded_mbs": 5, "total_mbs": 5, "elapsed_s": 9, "eta_s": 0}
    assert progress_line(doc) == "Completed: 5 of 5 mini-batches (100%), 0 failed, elapsed 0:00:09"


def _beat(*, drained: bool, age_s: float) -> Heartbeat:
    at = (NOW - timedelta(seconds=age_s)).isoformat(timespec="seconds")
    return Heartbeat("n1", 9, "b", 1, "h", at, at, slots=2, gpus=0, draining=True, drained=drained)


def test_a_drained_node_is_drained_not_stale() -> None:
    silent = {"silent_s": 300.0, "alive": False}
    assert node_row(_beat(drained=True, age_s=300), NOW, seen=silent)["stale"] is False
    assert node_row(_beat(drained=True, age_s=300), NOW)["drained"] is True
    died = node_row(_beat(drained=False, age_s=300), NOW, seen=silent)  # killed mid-drain
    assert died["stale"] is True and died["drained"] is False


def test_a_script_without_run_is_the_reason_not_the_init_count() -> None:
    error = InitError(
        "process001",
        "EntryScriptError: entry script /j/code/score.py defines no run(mini_batch) function",
    )
    reports = [NodeInit("n1", 2, 0, 6, True, error), NodeInit("n2", 2, 0, 6, True, None)]
    assert init_failure(reports, 3.0) == (
        "entry script /j/code/score.py defines no run(mini_batch) function (process001 on "
        "node n1): no worker could start, so no mini-batch ran"
    )
    other = dataclasses.replace(error, error="OSError: no GPU")
    reason = init_failure([NodeInit("n1", 2, 0, 6, True, other)], 3.0)
    assert reason is not None and reason.startswith("init() failed 6 times")


def _ended(job_id: str, state: str, days: float, uid: int) -> Ended:
    at = (NOW - timedelta(days=days)).isoformat(timespec="seconds")
    return Ended(job_id, state, at, uid)


def test_gc_chooses_ended_jobs_older_than_the_days_and_the_users_own() -> None:
    jobs = [
        _ended("old", "Completed", 10, 1000),
        _ended("partial", "Completed with failures", 8, 1000),
        _ended("young", "Failed", 2, 1000),
        _ended("theirs", "Canceled", 30, 1001),
        _ended("odd", "Running", 30, 1000),  # never, whatever a document says
        Ended("unreadable", "Completed", "yesterday", 1000),
    ]
    chosen, others = old_jobs(jobs, 7, NOW, uid=1000, admin=False)
    assert [(j.job_id, round(age)) for j, age in chosen] == [("old", 10), ("partial", 8)]
    assert others == 1
    everyone, others = old_jobs(jobs, 7, NOW, uid=1000, admin=True)
    assert [j.job_id for j, _ in everyone] == ["old", "partial", "theirs"] and others == 0


def test_remove_acts_on_ended_jobs_only() -> None:
    owner = Person(1000, "alice")
    for place, verb in ((JobPlace.ENDED, Verb.ACT), (JobPlace.DRIVEN, Verb.ANSWER)):
        d = decide("j1", "remove", place, asker=owner, owner=owner, asker_is_admin=False)
        assert d.verb is verb
    queued = decide(
        "j1", "remove", JobPlace.WAITING, asker=owner, owner=owner, asker_is_admin=False
    )
    assert (queued.ok, queued.message) == (False, "job j1 is queued: only ended jobs are removed")
    bob = Person(1001, "bob")
    theirs = decide("j1", "remove", JobPlace.ENDED, asker=bob, owner=owner, asker_is_admin=False)
    assert theirs.verb is Verb.ANSWER and not theirs.ok and "may not remove it" in theirs.message
