"""A commit that lands just after the leader listed ``done/`` is ingested when the next
listing is due, not at the leader's next tick.

The leader lists a job's commit folders at most every ``LIST_INTERVAL_S``; a step that
comes sooner (woken by the commit's own ring) defers the listing, and the driver says
when it is due so the leader's wait ends then. Before, the ring was spent and the last
commit of a job waited a whole tick (0.5 s) to be read. The driver runs on a real
spool; a hand-made agent claims and commits by the spool's own renames.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from typing import TYPE_CHECKING, cast

import pytest

from prsd.leader.intake.intake import load_taken_job, take_in
from prsd.leader.run.donescan import LIST_INTERVAL_S, DoneScan, wait_s
from prsd.leader.run.job import JobDriver
from prsd.spool.claim import commit, list_pending, prepare_node, try_claim
from prsd.spool.jobfolder import JobFolder
from prsd.spool.opening import open_spool
from prsd.spool.taskrecords import ResultMeta, TaskBody
from prsd.submit import submit
from prsd.wire.records import SUCCEEDED, Outcome
from tests.jobkit import ECHO_SCRIPT, ECHO_YAML, make_job

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from prsd.spool.jobfolder import JobFiles
    from prsd.spool.layout import JobLayout

NODE = "n1"


def _commit_one(layout: JobLayout) -> str:
    """Claim the first pending task, write its result (every mini-batch succeeded) and
    commit it: the task's name."""
    prepare_node(layout, NODE)
    claim = try_claim(layout, NODE, list_pending(layout, 1)[0])
    assert claim is not None
    payload, outcomes = b"", []
    for mb in TaskBody.decode(claim.body).mini_batches:
        data = f"row {mb.index}\n".encode()
        outcomes.append(
            Outcome(
                mb.index,
                SUCCEEDED,
                items=mb.items,
                succeeded_items=mb.items,
                offset=len(payload),
                length=len(data),
            )
        )
        payload += data
    result = layout.result(claim.task, NODE)
    result.parent.mkdir(parents=True, exist_ok=True)
    result.write_bytes(payload + ResultMeta(claim.task.name, NODE, tuple(outcomes)).encode())
    assert commit(layout, NODE, claim.task)
    return claim.task.name


@contextmanager
def _driver(tmp_path: Path, files: int) -> Iterator[JobDriver]:
    """A driver of a fresh job; let go of at the end (its logs closed)."""
    spool = open_spool(tmp_path / "spool")
    job_id, _ = submit(make_job(tmp_path, ECHO_SCRIPT, ECHO_YAML, files=files), spool)
    layout = take_in(spool, job_id)
    assert layout is not None
    driver = JobDriver(layout, load_taken_job(layout), epoch=1, now=0.0)
    try:
        yield driver
    finally:
        driver.abandon()


def test_a_commit_just_after_a_listing_is_read_when_the_listing_is_due(tmp_path: Path) -> None:
    with _driver(tmp_path, files=3) as driver:
        assert not driver.step(0.0, [])  # lists (nothing) and writes the tasks
        assert driver.listing_due is None
        assert len(driver.table) == 3
        # The commit watch holds a commit's ring until then (prsd.spool.commitbell).
        assert driver.commits_listed_at() == pytest.approx(LIST_INTERVAL_S)
        _commit_one(driver.layout)
        # Woken 30 ms after the listing (the commit's ring): too soon to list again.
        assert not driver.step(0.03, [])
        assert len(driver.table) == 3, "a listing was made inside the interval"
        assert driver.listing_due == pytest.approx(LIST_INTERVAL_S)
        # The leader's wait ends when the listing is due, not at its tick.
        assert wait_s(0.5, 0.03, [driver.listing_due]) == pytest.approx(LIST_INTERVAL_S - 0.03)
        assert not driver.step(LIST_INTERVAL_S, [])
        assert len(driver.table) == 2, "the commit was not ingested when its listing was due"
        assert driver.listing_due is None


def test_the_last_commit_ends_the_job_at_the_due_listing(tmp_path: Path) -> None:
    with _driver(tmp_path, files=2) as driver:
        driver.fleet_slots = 1  # the last task is the last wave only once it alone is left
        driver.step(0.0, [])
        _commit_one(driver.layout)
        _commit_one(driver.layout)  # the job's last task, committed with the one before
        assert not driver.step(0.05, [])  # their ring, 50 ms after the listing
        due = driver.listing_due
        assert due is not None and due == pytest.approx(0.1)
        assert driver.step(due, []), "the job did not end at the deferred listing"
        assert driver.final is not None and driver.final.state == "Completed"
        assert driver.listing_due is None  # an ended job asks for no step


def test_in_the_last_wave_each_commit_is_read_at_its_ring(tmp_path: Path) -> None:
    """Once every task is written and no more are outstanding than worker slots serve the
    job, every step lists: the job's last commits are read at their own rings and its
    end waits for no interval."""
    with _driver(tmp_path, files=4) as driver:
        driver.fleet_slots = 2
        driver.step(0.0, [])
        assert driver.book.split_done and len(driver.table) == 4
        _commit_one(driver.layout)
        assert not driver.step(0.03, [])  # 4 outstanding, 2 slots: deferred
        assert len(driver.table) == 4 and driver.listing_due == pytest.approx(0.1)
        assert driver.commits_listed_at() == pytest.approx(0.1)  # not the last wave yet
        assert not driver.step(0.1, [])
        assert len(driver.table) == 3
        _commit_one(driver.layout)
        assert not driver.step(0.11, [])  # 3 outstanding: deferred still
        assert len(driver.table) == 3
        assert not driver.step(0.2, [])
        assert len(driver.table) == 2  # the last wave from here
        _commit_one(driver.layout)
        assert driver.commits_listed_at() == -math.inf  # the last wave: rung at once
        assert not driver.step(0.21, [])  # read at its ring, 10 ms after a listing
        assert len(driver.table) == 1 and driver.listing_due is None
        _commit_one(driver.layout)  # the job's last task
        assert driver.step(0.22, []), "the job's last commit waited for the interval"
        assert driver.final is not None and driver.final.state == "Completed"


def test_new_commits_hands_each_name_over_until_it_was_handled(tmp_path: Path) -> None:
    with _driver(tmp_path, files=3) as driver:
        driver.step(0.0, [])
        layout = driver.layout
        names = {_commit_one(layout), _commit_one(layout)}
        shards = [p.name for p in layout.done.iterdir()]
        scan = DoneScan(JobFolder.of(layout))
        seen = scan.new_commits(shards)
        first = next(seen)  # handed over; an error now leaves it for the next listing
        seen.close()
        again = {name for name, _ in scan.new_commits(shards)}
        assert first[0] in again and again == names
        assert first[1] == NODE
        assert list(scan.new_commits(shards)) == []  # each handled once
        assert list(scan.new_commits([])) == []  # shards not named are forgotten
        assert {name for name, _ in scan.new_commits(shards)} == names


def test_due_defers_inside_the_interval_and_says_when() -> None:
    scan = DoneScan(cast("JobFiles", None), interval_s=0.1)  # no listing made here
    assert scan.due(5.0) and scan.due_at is None
    assert scan.next_at == pytest.approx(5.1)
    assert not scan.due(5.04) and scan.due_at == pytest.approx(5.1)
    assert not scan.due(5.09) and scan.due_at == pytest.approx(5.1)
    assert scan.due(5.1) and scan.due_at is None
    assert scan.due(5.12, eager=True) and scan.due_at is None  # the last wave: at once


@pytest.mark.parametrize(
    ("tick", "now", "dues", "want"),
    [
        (0.5, 1.0, [], 0.5),
        (0.5, 1.0, [None, None], 0.5),
        (0.5, 1.0, [1.08, None, 1.2], 0.08),
        (0.5, 1.0, [0.9], 0.0),  # overdue: at once
        (0.25, 1.0, [2.0], 0.25),  # the tick comes first
    ],
)
def test_wait_s(tick: float, now: float, dues: list[float | None], want: float) -> None:
    assert wait_s(tick, now, dues) == pytest.approx(want)
