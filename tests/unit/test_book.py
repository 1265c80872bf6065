"""The job's book as a value: built from records, asked what the leader does next."""

from __future__ import annotations

from prsd.leader.run.book import Ending, JobBook, Timeouts
from prsd.leader.run.ledger import Ledger
from prsd.leader.run.snapshot import NodeRow
from prsd.leader.run.verdict import Counts, Thresholds
from prsd.leader.takeover.takeover import settled
from prsd.spool.nodereport import NodeReport
from prsd.wire.records import FAILED, REQUEUED, SUCCEEDED, MiniBatch, Outcome

TIMEOUTS = Timeouts(first_task_s=60.0, progress_s=300.0)


def _book(
    planned: int,
    attempts: list[tuple[Outcome, int, str, float]],
    *,
    max_retries: int = 2,
    thresholds: Thresholds | None = None,
) -> JobBook:
    return JobBook.from_records(
        Ledger(max_retries),
        thresholds or Thresholds(),
        TIMEOUTS,
        started=100.0,
        planned=[MiniBatch(i, [f"f{i}"], items=1) for i in range(planned)],
        attempts=attempts,
    )


def _ok(i: int, elapsed: float = 1.0) -> Outcome:
    return Outcome(index=i, status=SUCCEEDED, items=1, succeeded_items=1, elapsed_s=elapsed)


def _bad(i: int, error: str = "boom") -> Outcome:
    return Outcome(index=i, status=FAILED, items=1, error=error, process_name="p0")


def test_a_book_replayed_from_outcomes_counts_and_ends_completed() -> None:
    book = _book(3, [(_ok(0), 1, "n1", 101.0), (_ok(1), 1, "n1", 102.0), (_ok(2), 1, "n2", 103.0)])
    book.split_finished()
    assert book.ledger.counts() == Counts(total_mbs=3, succeeded_mbs=3, items=3, succeeded_items=3)
    assert book.ending(bisect_busy=False) == Ending("Completed", "")
    assert book.ending(bisect_busy=True) is None  # a poison-input search still runs
    assert book.last_progress == 103.0
    assert book.progress_line(160.0) == (
        "Processed 3 of 3 mini batches in 0:01:00. Estimated remaining time 0:00:00."
    )


def test_failures_are_retried_then_final_and_the_first_is_the_root_cause() -> None:
    attempts = [(_bad(0, "first"), 1, "n1", 101.0), (_bad(0, "second"), 2, "n1", 102.0)]
    attempts += [(_bad(0, "third"), 3, "n2", 103.0), (_ok(1), 1, "n2", 104.0)]
    book = _book(2, attempts, max_retries=2)
    book.split_finished()
    c = book.ledger.counts()
    assert (c.succeeded_mbs, c.failed_mbs, book.ledger.attempts) == (1, 1, 4)
    ending = book.ending(bisect_busy=False)
    assert ending is not None and ending.state == "Completed"  # thresholds -1: goes on
    snap = book.snapshot(105.0, job_id="j", name="n", outstanding=0, output="")
    assert snap.first_error.startswith("First error: mini-batch 000000000")
    assert "first" in snap.first_error
    assert [e[1] for e in snap.errors] == [1, 1, 1]


def test_an_attempt_older_than_the_ledgers_is_stale_and_requeues_are_caught_up() -> None:
    book = _book(1, [])
    live, lost = book.current(0, 3)  # a new leader sees attempt 3: 1 and 2 were requeued
    assert live
    assert [(o.status, a) for o, a in lost] == [(REQUEUED, 1), (REQUEUED, 2)]
    assert book.current(0, 2) == (False, [])  # a deposed leader's late task
    book.record(_ok(0), 3, "n1", 101.0)
    assert book.current(0, 3) == (False, [])  # final: a second result is not used


def test_thresholds_fail_the_job_with_their_reason() -> None:
    th = Thresholds(mini_batch_error_threshold=0)
    book = _book(2, [(_bad(0), 1, "n1", 101.0)], max_retries=0, thresholds=th)
    assert book.ending(bisect_busy=True) == Ending(
        "Failed", "1 mini-batches failed, more than mini_batch_error_threshold=0"
    )


def test_timeouts_count_from_the_start_and_from_the_last_progress() -> None:
    book = _book(0, [])
    assert book.timed_out(159.0) is None
    assert "first_task_creation_timeout" in (book.timed_out(161.0) or "")
    book.plan(MiniBatch(0, ["f"], items=1), 110.0)
    assert book.timed_out(399.0) is None
    book.record(Outcome(index=0, status=REQUEUED), 1, "n", 390.0)  # a requeue is no progress
    assert "progress_update_timeout" in (book.timed_out(401.0) or "")


def test_node_reports_fill_the_snapshot() -> None:
    book = _book(1, [])
    book.read_nodes([NodeReport("n1", workers=2, init_failures=1), NodeReport("n2")])
    snap = book.snapshot(101.0, job_id="j", name="n", outstanding=4, output="o")
    assert snap.nodes == (NodeRow("n1", 2, 1, False), NodeRow("n2", 1, 0, False))
    assert (snap.planned_mbs, snap.outstanding_tasks, snap.elapsed_s) == (1, 4, 1.0)


def test_the_take_over_settles_on_a_local_disk_at_once_and_waits_on_a_mount() -> None:
    assert settled(local=True, unseen=3, looks_left=1, past_deadline=False)
    assert not settled(local=False, unseen=0, looks_left=1, past_deadline=False)
    assert settled(local=False, unseen=0, looks_left=0, past_deadline=False)
    assert not settled(local=False, unseen=2, looks_left=0, past_deadline=False)
    assert settled(local=False, unseen=2, looks_left=-4, past_deadline=True)


def test_a_command_step_is_said_as_its_command() -> None:
    """A pipeline's command step: its progress and first error speak of the command."""
    command = Thresholds(0, command=True)
    running = _book(1, [], thresholds=command)
    assert running.progress_line(112.0) == "The command has been running for 0:00:12."
    failed = _book(1, [(_bad(0, "exit 3"), 1, "n1", 101.0)], max_retries=0, thresholds=command)
    assert failed.progress_line(130.0) == "The command ran for 0:00:30."
    assert failed.errors.root_cause().startswith(
        "First error: attempt 1 of the command on node n1, p0: exit 3"
    )
