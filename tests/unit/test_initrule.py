"""The job-wide init rules over node reports (pure)."""

from __future__ import annotations

import pytest

from prsd.leader.run.initrule import NodeInit, first_error_detail, init_failure
from prsd.spool.initrecords import InitError
from prsd.spool.nodereport import NodeReport
from prsd.tunables import init_grace_s, init_rule_window_s

ERR = InitError("process003", "OSError: no GPU", "  x\nOSError: no GPU", "/l/e.txt")


def _node(
    node: str, *, ok: int = 0, failed: int = 0, gave_up: bool = False, workers: int = 2
) -> NodeInit:
    return NodeInit(node, workers, ok, failed, gave_up, ERR if failed else None)


def test_no_reports_no_verdict() -> None:
    """Without reports nothing is decided."""
    assert init_failure([], 1000) is None


def test_every_node_gave_up_fails_at_once() -> None:
    """All nodes stopped starting workers and none ever succeeded: fail, quoting the error."""
    reason = init_failure(
        [_node("a", failed=6, gave_up=True), _node("b", failed=6, gave_up=True)], 1.0
    )
    assert reason is not None
    assert "OSError: no GPU (process003 on node a)" in reason
    assert "12 times" in reason


def test_one_node_still_trying_keeps_the_job() -> None:
    """A node that has not given up keeps the job alive before two minutes."""
    assert init_failure([_node("a", failed=6, gave_up=True), _node("b", failed=1)], 30.0) is None


def test_two_minute_rule() -> None:
    """After 120 s, 2 x nodes x workers failures with no success fail the job."""
    nodes = [_node("a", failed=4), _node("b", failed=4)]
    assert init_failure(nodes, 119.0) is None
    reason = init_failure(nodes, 121.0)
    assert reason is not None and "limit 2 x nodes x workers = 8" in reason
    assert init_failure([_node("a", failed=3), _node("b", failed=4)], 500.0) is None


def test_any_success_disarms_the_rules() -> None:
    """One successful init anywhere means the script can start: no init failure."""
    assert init_failure([_node("a", failed=9, gave_up=True), _node("b", ok=1)], 500.0) is None


def test_detail_quotes_traceback_and_file() -> None:
    """The detail for job_result.txt has the traceback tail and the log file."""
    detail = first_error_detail([_node("a", failed=1)])
    assert "OSError: no GPU" in detail and "Full traceback: /l/e.txt" in detail


def test_every_worker_stuck_in_init_fails_the_job() -> None:
    """Third rule: as many init timeouts as workers, and no success, fail at once."""
    stuck = NodeInit("a", 2, 0, 2, False, ERR, timeouts=2)
    reason = init_failure([stuck], 5.0)
    assert reason is not None and "every worker stayed in init() past its deadline" in reason
    one_of_two = NodeInit("a", 2, 0, 1, False, ERR, timeouts=1)
    assert init_failure([one_of_two], 5.0) is None
    other_node = NodeInit("b", 2, 0, 0, False, None)
    assert init_failure([stuck, other_node], 5.0) is None


def test_window_is_a_parameter() -> None:
    """The two-minute window of the second rule is passed in (operators may shorten it)."""
    nodes = [_node("a", failed=4)]
    assert init_failure(nodes, 2.0, window_s=120.0) is None
    assert init_failure(nodes, 2.0, window_s=1.0) is not None


def test_report_carries_init_timeouts() -> None:
    """The node report's init_timeouts reaches the rule (missing: 0)."""
    report = b'{"node_id": "n", "workers": 3, "init_failures": 3, "init_timeouts": 3}'
    assert NodeInit.from_report(NodeReport.decode(report)).timeouts == 3
    bare = NodeInit.from_report(NodeReport.decode(b'{"node_id": "n"}'))
    assert (bare.timeouts, bare.workers) == (0, 1)  # a report that names no workers: one


@pytest.mark.parametrize(
    ("text", "expected"), [("", 120.0), ("2.5", 2.5), ("-1", 120.0), ("soon", 120.0)]
)
def test_init_window_tunable(text: str, expected: float) -> None:
    """PRSD_INIT_RULE_WINDOW_S: a number >= 0 replaces Azure's 120 s; anything else is ignored."""
    assert init_rule_window_s({"PRSD_INIT_RULE_WINDOW_S": text}) == expected
    assert init_grace_s({}) == 30.0
