"""The spool's records of a task's life and of a job's state: each encodes and decodes to
itself, and a malformed one is refused with BadRecord naming the record and the field."""

from __future__ import annotations

import json
from typing import Any

import pytest

from prsd.spool.badrecord import BadRecord
from prsd.spool.envrecord import EnvBuild
from prsd.spool.finalrecord import FinalState
from prsd.spool.heartbeatrecord import Heartbeat
from prsd.spool.initrecords import InitError
from prsd.spool.nodereport import NodeReport
from prsd.spool.states import JobState
from prsd.spool.statusschema import validate_status
from prsd.spool.taskrecords import FOOTER, RESULT_MAGIC, ResultMeta, TaskBody
from prsd.wire.records import MiniBatch, Outcome

FULL = Outcome(7, "failed", items=3, succeeded_items=1, failed_items=2, offset=5, length=9,
               process_name="process001", error="ValueError: x", extra={"warning": "w"})  # fmt: skip


def test_records_round_trip() -> None:
    body = TaskBody(
        "job-1", "csv", (MiniBatch(0, {"path": "/a"}, -1), MiniBatch(1, [], 2, {"k": 1}))
    )
    assert TaskBody.decode(body.encode()) == body
    assert Outcome.from_json(FULL.to_json()) == FULL
    meta = ResultMeta("000000007.a1.e1", "n1", (FULL, Outcome(8, "succeeded")))
    data = meta.encode()
    magic, size = FOOTER.unpack(data[-FOOTER.size :])
    assert magic == RESULT_MAGIC and size == len(data) - FOOTER.size
    assert ResultMeta.decode(data[:size]) == meta


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\xff", "task file: not JSON"),
        (b'{"v": 2, "job": "j", "kind": "files", "mbs": []}', "task file format 2 is not 1"),
        (b'{"v": 1, "job": "j", "kind": "files"}', "task file: mbs is missing"),
        (b'{"v": 1, "job": "j", "kind": "files", "mbs": [{"i": 0}]}', "mini-batch: p"),
    ],
)
def test_a_malformed_task_file_is_refused_by_name(data: bytes, message: str) -> None:
    with pytest.raises(BadRecord, match=message):
        TaskBody.decode(data)


def test_node_report_final_state_and_status_records() -> None:
    report = NodeReport(
        "n1",
        updated_at="2026-11-25T10:00:00+00:00",
        workers=2,
        busy=1,
        init_failures=1,
        first_init_error=InitError("process000", "boom"),
        environment=EnvBuild("building", "t"),
    )
    assert NodeReport.decode(report.encode()) == report
    blind = NodeReport("n2", cannot_see=["jobs/j/code/"])
    assert NodeReport.decode(blind.encode()) == blind
    with pytest.raises(BadRecord, match="node report: workers is str"):
        NodeReport.decode(b'{"node_id": "n", "workers": "many"}')
    final = FinalState("Failed", "why", 42, "", "First error: x", "2026-11-25T10:00:00+00:00")
    assert FinalState.from_json(final.to_json()) == final
    with pytest.raises(BadRecord, match="final.json: state 'Done' is none of"):
        FinalState.from_json(b'{"state": "Done"}')
    doc = {"schema": 1, "job_id": "j", "state": "Running", "reason": "", "eta_s": None}
    assert validate_status(doc) == []
    assert validate_status({"schema": 1, "job_id": "j", "state": 3}) == [
        "state: int where str is expected",
        "reason: missing",
    ]


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda o: o.update(mbs=[]), "checksum"),
        (lambda o: (o.update(mbs=[]), o.pop("sum")), "names no mini-batch"),
        (lambda o: o["mbs"][0]["p"].pop(), "checksum"),
        (lambda o: (o["mbs"][0]["p"].pop(), o.pop("sum")), "lists 1 items, not its n = 2"),
    ],
)
def test_a_task_file_that_lies_is_unreadable(edit: Any, why: str) -> None:
    """A task body whose checksum, mini-batch list or item count does not hold is refused."""
    body = TaskBody("job-1", "files", (MiniBatch(0, ["/a", "/b"], 2),))
    obj = json.loads(body.encode())
    edit(obj)
    with pytest.raises(BadRecord, match=why):
        TaskBody.decode(json.dumps(obj).encode())
    old = {k: v for k, v in json.loads(body.encode()).items() if k != "sum"}
    assert TaskBody.decode(json.dumps(old).encode()) == body  # the previous format reads


def test_result_metadata_that_lies_is_refused() -> None:
    """Result metadata edited after it was written does not match its checksum."""
    data = ResultMeta("000000007.a1.e1", "n1", (Outcome(7, "succeeded", items=3),)).encode()
    meta = data[: FOOTER.unpack(data[-FOOTER.size :])[1]]
    with pytest.raises(BadRecord, match="checksum"):
        ResultMeta.decode(meta.replace(b'"items":3', b'"items":4'))


def test_a_node_reports_init_error_and_build_are_typed_and_a_damaged_one_says_so() -> None:
    data = json.dumps(
        {"node_id": "n1", "first_init_error": {"error": "E", "process_name": "p"},
         "environment": {"state": "building", "since": "t", "phase": "resolving"}}
    ).encode()  # fmt: skip
    report = NodeReport.decode(data)
    assert report.first_init_error == InitError("p", "E")
    assert report.environment == EnvBuild("building", "t", "resolving")
    damaged = NodeReport.decode(b'{"node_id": "n1", "environment": {"state": "lost"}}')
    assert damaged.environment is not None and damaged.environment.state == "failed"
    assert "environment report cannot be read" in damaged.environment.error


@pytest.mark.parametrize(
    ("decode", "data", "message"),
    [
        (NodeReport.decode, b'{"node_id": 3}', "node report: node_id is int"),
        (NodeReport.decode, b"[]", "node report: list where an object"),
        (NodeReport.decode, b"{", "node report: not JSON"),
        (FinalState.from_json, b'{"state": "Failed"}', "final.json: reason is missing"),
        (FinalState.from_json, b'{"schema": 2}', "final.json: schema 2 is newer"),
    ],
)
def test_a_bad_node_report_or_final_record_is_a_bad_record(
    decode: Any, data: bytes, message: str
) -> None:
    with pytest.raises(BadRecord, match=message):
        decode(data)


def test_a_final_records_state_reads_back_as_a_job_state() -> None:
    final = FinalState("Canceled", "", 3, "", "", "t")
    assert FinalState.from_json(final.to_json()).state is JobState.CANCELED


def test_a_heartbeat_round_trips_and_a_bad_one_is_a_bad_record() -> None:
    beat = Heartbeat("n1", 4, "b", 12, "h", "t0", "t1", 2, 0, jobs={"j": {"busy": 1}})
    assert Heartbeat.read(beat.encode()) == beat
    newer = json.loads(beat.encode()) | {"schema": 2, "added_later": 1}
    assert Heartbeat.read(json.dumps(newer).encode()).seq == 4  # a newer agent stays alive
    with pytest.raises(BadRecord, match="heartbeat: seq is str"):
        Heartbeat.read(beat.encode().replace(b'"seq": 4', b'"seq": "4"'))
    assert Heartbeat.decode(b'{"node_id": "n1"') is None
