"""The pure parts of the command line's views: progress lines, drained nodes, and the
reason a script without ``run()`` gives (no I/O)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from prsd.cli.nodes import node_row
from prsd.cli.runview import progress_line
from prsd.leader.initrule import NodeInit, init_failure
from prsd.storage.heartbeat import Heartbeat

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
    error = {
        "process_name": "process001",
        "error": "EntryScriptError: entry script /j/code/score.py defines no run(mini_batch) "
        "function",
    }
    reports = [NodeInit("n1", 2, 0, 6, True, error), NodeInit("n2", 2, 0, 6, True, None)]
    assert init_failure(reports, 3.0) == (
        "entry script /j/code/score.py defines no run(mini_batch) function (process001 on "
        "node n1): no worker could start, so no mini-batch ran"
    )
    other = dict(error, error="OSError: no GPU")
    reason = init_failure([NodeInit("n1", 2, 0, 6, True, other)], 3.0)
    assert reason is not None and reason.startswith("init() failed 6 times")
