"""A node's first init error: written by the agent, read by the leader, one record."""

from __future__ import annotations

import json

import pytest

from prsd.leader.run.initrule import NodeInit, first_error_detail, init_failure
from prsd.spool.badrecord import BadRecord
from prsd.spool.initrecords import InitError
from prsd.spool.nodereport import NodeReport

WORKER = InitError("process002", "OSError: no GPU", "  x\nOSError: no GPU", "/l/process002.txt")
ENVIRONMENT = InitError(
    "environment", "No solution found", environment=True, build_log="/l/env/n1.txt"
)


@pytest.mark.parametrize("error", [WORKER, ENVIRONMENT])
def test_round_trip_through_a_node_report(error: InitError) -> None:
    """What the agent writes into its report is what the leader reads back."""
    report = NodeReport("n1", init_failures=1, first_init_error=error)
    assert NodeReport.decode(report.encode()).first_init_error == error


def test_a_worker_error_names_its_traceback_an_environment_its_build_log() -> None:
    assert (WORKER.where, ENVIRONMENT.where) == ("/l/process002.txt", "/l/env/n1.txt")
    assert "environment" not in WORKER.to_obj() and WORKER.to_obj()["schema"] == 1


def test_a_report_written_before_the_record_had_a_schema_still_reads() -> None:
    """The object agents wrote before (no ``schema``) is version 1."""
    old = {"process_name": "p", "error": "E", "traceback_tail": "t", "error_file": "/f"}
    assert InitError.decode(old) == InitError("p", "E", "t", "/f")


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ({"process_name": "p"}, "error"),
        ({"error": 3}, "error"),
        ({"error": "E", "environment": "yes"}, "environment"),
        ({"error": "E", "traceback_tail": ["x"]}, "traceback_tail"),
        ({"schema": 9, "error": "E"}, "newer"),
        (["E"], "first_init_error"),
        ("not json", "not JSON"),
    ],
)
def test_a_bad_value_is_a_bad_record_naming_the_field(value: object, named: str) -> None:
    with pytest.raises(BadRecord, match=named) as caught:
        InitError.decode(value)
    assert "first_init_error" in str(caught.value)


def test_the_leader_reports_an_unreadable_init_error_and_goes_on() -> None:
    """A damaged first_init_error does not stop the init rule: its reason says so."""
    data = json.dumps(
        {"node_id": "n1", "workers": 1, "init_failures": 3, "gave_up": True,
         "first_init_error": {"error": 42}}
    ).encode()  # fmt: skip
    node = NodeInit.from_report(NodeReport.decode(data))
    assert node.first_error is not None
    reason = init_failure([node], 1.0)
    assert reason is not None and "the node's init error cannot be read" in reason
    assert "first_init_error: error" in reason


def test_the_leader_reads_the_agents_error_into_the_job_result() -> None:
    data = NodeReport("n1", workers=1, init_failures=3, gave_up=True,
                      first_init_error=WORKER).encode()  # fmt: skip
    node = NodeInit.from_report(NodeReport.decode(data))
    assert node.first_error == WORKER
    assert (
        first_error_detail([node]) == "    x\n  OSError: no GPU\nFull traceback: /l/process002.txt"
    )
