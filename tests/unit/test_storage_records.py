"""The storage layer's typed records: each round-trips, and every bad input is one BadRecord."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from prsd.errors import ExitCode
from prsd.spool.badrecord import BadRecord, Doc
from prsd.spool.endrecords import ended_status, final_record
from prsd.spool.finalrecord import FinalState
from prsd.spool.nodesview import NodeSeen, NodesView
from prsd.spool.pipelinerecord import BadRecord as PipelineBadRecord
from prsd.spool.pipelinestate import PipelineState
from prsd.spool.retryrecords import RetryOrder, RetryPlan
from prsd.spool.startedrecord import Started
from prsd.spool.states import ENDED, EXIT_CODES, JobState, job_state
from prsd.spool.statusrecord import JobStatus
from prsd.spool.statusschema import validate_status
from prsd.wire.fields import RecordError

if TYPE_CHECKING:
    from collections.abc import Callable

BAD_DOCUMENTS = [
    (b"\xff\xfe", "not JSON"),
    (b"{", "not JSON"),
    (b"[1, 2]", "list where an object"),
    (b'"text"', "str where an object"),
    (b"null", "NoneType where an object"),
    (b'{"schema": 2}', "newer than this prsd reads"),
    (b'{"schema": 0}', "not a version number"),
    (b'{"schema": "1"}', "not a version number"),
    (b'{"schema": true}', "not a version number"),
]


def test_one_bad_record_error_for_the_whole_storage_layer() -> None:
    assert PipelineBadRecord is BadRecord
    assert issubclass(BadRecord, RecordError) and issubclass(BadRecord, ValueError)


@pytest.mark.parametrize(("data", "said"), BAD_DOCUMENTS)
def test_doc_refuses_what_is_no_record_of_this_version(data: bytes, said: str) -> None:
    with pytest.raises(BadRecord, match=said):
        Doc(data, "x.json", 1)


def test_doc_fields_refuse_missing_and_mistyped_values_naming_them() -> None:
    doc = Doc(b'{"a": "text", "n": true, "l": ["x", 1]}', "x.json", 1)
    assert doc.version == 1  # no schema: the first version
    with pytest.raises(BadRecord, match=r"x\.json: b is missing"):
        doc.text("b")
    with pytest.raises(BadRecord, match=r"x\.json: n is a boolean"):
        doc.integer("n")
    with pytest.raises(BadRecord, match="a is str"):
        doc.flag("a")
    with pytest.raises(BadRecord, match="l holds something that is not a string"):
        doc.texts("l")
    assert doc.text("b", default="d") == "d"


def test_started_round_trips() -> None:
    started = Started(1_790_000_000.25)
    assert Started.from_json(started.to_json()) == started
    doc = json.loads(started.to_json())
    assert doc["schema"] == 1 and doc["started_at"].startswith("2026-")


def test_started_of_an_older_leader_still_reads() -> None:
    assert Started.from_json(b'{"unix_s": 12, "started_at": "x"}') == Started(12.0)


@pytest.mark.parametrize(
    "data",
    [
        b"{}",
        b'{"unix_s": "12"}',
        b'{"unix_s": true}',
        b'{"unix_s": -1}',
        b'{"unix_s": 1e999}',
        b'{"unix_s": NaN}',
        b'{"schema": 9, "unix_s": 1}',
        b"garbage",
    ],
)
def test_started_refuses_bad_input(data: bytes) -> None:
    with pytest.raises(BadRecord):
        Started.from_json(data)


def test_pipeline_state_round_trips_and_skips_more() -> None:
    state = PipelineState({"a": "not run: x"}, canceled=True)
    assert PipelineState.from_json(state.to_json()) == state
    more = state.skipping({"b": "not run: y"})
    assert more.skipped == {"a": "not run: x", "b": "not run: y"} and more.canceled
    assert state.skipped == {"a": "not run: x"}  # unchanged
    assert PipelineState.from_json(b'{"skipped": {}}') == PipelineState()  # an older record


@pytest.mark.parametrize(
    "data",
    [
        b'{"skipped": []}',
        b'{"skipped": {"a": 1}}',
        b'{"skipped": {}, "canceled": "yes"}',
        b'{"schema": 2, "skipped": {}}',
        b"[]",
        b"",
    ],
)
def test_pipeline_state_refuses_bad_input(data: bytes) -> None:
    with pytest.raises(BadRecord):
        PipelineState.from_json(data)


def test_job_states_are_their_text() -> None:
    assert {"Failed": 1}[JobState.FAILED] == 1 and f"{JobState.FAILED}" == "Failed"
    assert json.dumps({"state": JobState.COMPLETED_WITH_FAILURES}) == (
        '{"state": "Completed with failures"}'
    )
    assert EXIT_CODES["Failed"] is ExitCode.JOB_FAILED  # found by its text too
    assert EXIT_CODES[JobState.COMPLETED_WITH_FAILURES] is ExitCode.OK
    assert set(EXIT_CODES) == set(ENDED) and JobState.RUNNING not in ENDED
    assert job_state("Canceled") is JobState.CANCELED
    with pytest.raises(ValueError, match="Lost"):
        job_state("Lost")


def test_final_record_takes_its_exit_code_from_its_state() -> None:
    final = final_record(JobState.CANCELED, "by prsctl cancel", counts={"total_mbs": 3})
    assert (final.state, final.exit_code, final.counts) == ("Canceled", 43, {"total_mbs": 3})
    assert FinalState.from_json(final.to_json()) == final
    with pytest.raises(ValueError, match="Running"):
        final_record(JobState.RUNNING, "")


def test_ended_status_is_a_valid_status_document() -> None:
    final = final_record(JobState.FAILED, "bad spec")
    status = ended_status("job-1", final)
    assert validate_status(status.to_doc()) == []
    assert JobStatus.from_json(status.to_json()) == status
    assert (status.job_id, status.state, status.reason) == ("job-1", "Failed", "bad spec")


def test_job_status_keeps_every_field_and_refuses_a_document_against_the_schema() -> None:
    doc = {
        "schema": 1,
        "job_id": "j",
        "state": "Running",
        "reason": "",
        "total_mbs": None,
        "eta_s": 3.5,
        "added_later": {"x": 1},  # a field a newer leader writes: kept
    }
    status = JobStatus.of(doc)
    assert status.fields == {"total_mbs": None, "eta_s": 3.5, "added_later": {"x": 1}}
    assert status.to_doc() == doc
    assert JobStatus.from_json(status.to_json()) == status


@pytest.mark.parametrize(
    ("doc", "said"),
    [
        ({"schema": 1, "job_id": "j", "state": "Running"}, "reason: missing"),
        ({"schema": 1, "job_id": 3, "state": "Running", "reason": ""}, "job_id: int"),
        ({"schema": 1, "job_id": "j", "state": "x", "reason": "", "eta_s": "1"}, "eta_s: str"),
        ({"schema": 1, "job_id": "j", "state": "x", "reason": "", "split_done": 1}, "split_done"),
        ({"job_id": "j", "state": "x", "reason": ""}, "schema: missing"),
        ({"schema": 2, "job_id": "j", "state": "x", "reason": ""}, "newer"),
    ],
)
def test_job_status_refuses_bad_documents(doc: dict[str, Any], said: str) -> None:
    with pytest.raises(BadRecord, match=said):
        JobStatus.from_json(json.dumps(doc).encode())


def _view() -> NodesView:
    seen = NodeSeen("host-a", 7, 1.5, True, False, 4, 1)
    return NodesView(3, 30.0, {"n1": seen, "n2": NodeSeen("host-b", 1, 99.0, False, True, 2, 0)})


def test_nodes_view_round_trips() -> None:
    view = _view()
    assert NodesView.from_json(view.to_json()) == view
    doc = json.loads(view.to_json())
    assert doc["schema"] == 1 and doc["nodes"]["n1"]["silent_s"] == 1.5


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda d: d.pop("nodes"), "nodes is missing"),
        (lambda d: d.update(epoch="3"), "epoch is str"),
        (lambda d: d["nodes"].update(n1=[]), "list where an object"),
        (lambda d: d["nodes"]["n1"].pop("alive"), "alive is missing"),
        (lambda d: d["nodes"]["n1"].update(slots=1.5), "slots is float"),
        (lambda d: d.update(schema=2), "newer"),
    ],
)
def test_nodes_view_refuses_bad_input(
    change: Callable[[dict[str, Any]], object], said: str
) -> None:
    doc = json.loads(_view().to_json())
    change(doc)
    with pytest.raises(BadRecord, match=said):
        NodesView.from_json(json.dumps(doc).encode())


def test_retry_records_round_trip_and_read_records_without_a_version() -> None:
    plan = RetryPlan("old", "files", ("/d/a.txt",), "c1", "c0", ("x=1",))
    assert RetryPlan.decode(plan.encode()) == plan
    assert RetryPlan.decode(b'{"of_job": "old", "mode": "payload"}') == RetryPlan("old", "payload")
    order = RetryOrder([0, -1], 1, [], 0, ["/d/a.txt"], 1)
    assert RetryOrder.decode(order.encode()) == order
    assert RetryOrder.decode(b"{}") == RetryOrder()


@pytest.mark.parametrize(
    "data",
    [
        b'{"mode": "files"}',
        b'{"of_job": "old", "mode": "everything"}',
        b'{"of_job": 7, "mode": "files"}',
        b'{"of_job": "old", "mode": "files", "failed_items": "a"}',
        b'{"of_job": "old", "mode": "files", "overrides": [1]}',
        b'{"schema": 2, "of_job": "old", "mode": "files"}',
        b"not json",
    ],
)
def test_retry_plan_refuses_bad_input(data: bytes) -> None:
    with pytest.raises(BadRecord):
        RetryPlan.decode(data)


@pytest.mark.parametrize(
    "data",
    [
        b'{"units": [0, "1"]}',
        b'{"units": [true]}',
        b'{"units": {}}',
        b'{"kept": 1.5}',
        b'{"voided": [1]}',
        b"[]",
    ],
)
def test_retry_order_refuses_bad_input(data: bytes) -> None:
    with pytest.raises(BadRecord):
        RetryOrder.decode(data)
