"""The records that cross processes and files: each encodes and decodes to itself, and a
malformed one is refused with an error naming the record and the field."""

from __future__ import annotations

import json
from typing import Any

import pytest

from prsd.wire import frames
from prsd.wire.fields import RecordError, dumps
from prsd.wire.final import FinalState
from prsd.wire.nodereport import NodeReport
from prsd.wire.records import (
    FOOTER,
    RESULT_MAGIC,
    MiniBatch,
    Outcome,
    ResultMeta,
    TaskBody,
    content_sum,
    dumps_summed,
)
from prsd.wire.status import validate_status

FULL = Outcome(
    7,
    "failed",
    items=3,
    succeeded_items=1,
    failed_items=2,
    offset=5,
    length=9,
    process_name="process001",
    pid=42,
    start_time="2026-11-25T10:00:00.000+00:00",
    elapsed_s=1.5,
    process_time_s=1.25,
    run_method_s=1.0,
    error="ValueError: x",
    traceback_tail="line",
    error_file="/logs/user/error/n1/process001.txt",
    header="a b\n",
    extra={"warning": "w"},
)


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


def test_an_outcome_leaves_out_empty_fields_and_reads_ints_as_floats() -> None:
    assert Outcome(0, "requeued").to_json() == {"index": 0, "status": "requeued"}
    assert Outcome.from_json({"index": 1, "status": "succeeded", "elapsed_s": 2}).elapsed_s == 2.0
    newer = {"index": 1, "status": "succeeded", "added_later": "x"}
    assert Outcome.from_json(newer) == Outcome(1, "succeeded")


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ([], "outcome: list where an object is expected"),
        ({"status": "failed"}, "outcome: index is missing"),
        ({"index": "7", "status": "failed"}, "outcome: index is str where int is expected"),
        ({"index": 7, "status": "lost"}, "outcome: status 'lost' is none of"),
        ({"index": 7, "status": "failed", "items": True}, "outcome: items is a boolean"),
        ({"index": 7, "status": "failed", "error": 3}, "outcome: error is int where str"),
    ],
)
def test_a_malformed_outcome_is_refused_by_name(obj: object, message: str) -> None:
    with pytest.raises(RecordError, match=message):
        Outcome.from_json(obj)


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
    with pytest.raises(RecordError, match=message):
        TaskBody.decode(data)


def test_frames_round_trip() -> None:
    mbs = (MiniBatch(3, ["/a"], 1), MiniBatch(4, ["/b", "/c"], 2, {"g": "x"}))
    for run in (frames.Run(mbs, "/r/x.res", last=True), frames.Run(mbs[:1], None, last=False)):
        assert frames.decode_command(json.loads(json.dumps(run.to_json()))) == run
    assert frames.decode_command(frames.Shutdown().to_json()) == frames.Shutdown()
    events: list[frames.Event] = [
        frames.Ready(12, 0.5, 9),
        frames.InitFailed("ImportError: y", "tail", "/e.txt"),
        frames.Done((FULL, Outcome(index=43, status="failed", error="boom"))),
        frames.Done(()),
        frames.Bye(),
    ]
    for event in events:
        assert frames.decode_event(event.to_json()) == event


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"ev": "start", "i": 1}, "unknown worker frame 'start'"),
        ({"ev": "done", "outcomes": [{"index": 1}]}, "outcome: status is missing"),
        ({"ev": "done", "outcome": {"index": 1}}, "done frame: outcomes is missing"),
        ({"ev": "ready", "pid": 1, "init_s": "fast", "board": 3}, "ready frame: init_s is str"),
        ({"ev": "ready", "pid": 1, "init_s": 0.1}, "ready frame: board is missing"),
        ({"ev": "hello"}, "unknown worker frame 'hello'"),
        ({"op": "run"}, "worker frame: ev is missing"),
    ],
)
def test_a_malformed_worker_frame_is_refused_by_name(obj: object, message: str) -> None:
    with pytest.raises(RecordError, match=message):
        frames.decode_event(obj)


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"op": "run", "mbs": [{"i": 1, "p": []}], "out": 3, "last": True}, "out is int"),
        ({"op": "run", "out": None, "last": True}, "run frame: mbs is missing"),
        ({"op": "run", "mbs": [], "out": None}, "run frame: last is missing"),
        ({"op": "run", "mbs": [{"i": 1}], "out": None, "last": True}, "p .*is missing"),
        ({"op": "dance"}, "unexpected frame 'dance' after hello"),
    ],
)
def test_a_malformed_agent_frame_is_refused_by_name(obj: object, message: str) -> None:
    with pytest.raises(RecordError, match=message):
        frames.decode_command(obj)


def test_node_report_final_state_and_status_records() -> None:
    report = NodeReport(
        "n1",
        updated_at="2026-11-25T10:00:00+00:00",
        workers=2,
        busy=1,
        init_failures=1,
        first_init_error={"error": "boom"},
        environment={"state": "building", "since": "t"},
    )
    assert NodeReport.decode(report.encode()) == report
    blind = NodeReport("n2", cannot_see=["jobs/j/code/"])
    assert NodeReport.decode(blind.encode()) == blind
    with pytest.raises(RecordError, match="node report: workers is str"):
        NodeReport.decode(b'{"node_id": "n", "workers": "many"}')
    final = FinalState("Failed", "why", 42, "", "First error: x", "2026-11-25T10:00:00+00:00")
    assert FinalState.from_json(final.to_json()) == final
    with pytest.raises(RecordError, match="final.json: state 'Done' is none of"):
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
    with pytest.raises(RecordError, match=why):
        TaskBody.decode(json.dumps(obj).encode())
    old = {k: v for k, v in json.loads(body.encode()).items() if k != "sum"}
    assert TaskBody.decode(json.dumps(old).encode()) == body  # the previous format reads


def test_result_metadata_that_lies_is_refused() -> None:
    """Result metadata edited after it was written does not match its checksum."""
    data = ResultMeta("000000007.a1.e1", "n1", (Outcome(7, "succeeded", items=3),)).encode()
    meta = data[: FOOTER.unpack(data[-FOOTER.size :])[1]]
    with pytest.raises(RecordError, match="checksum"):
        ResultMeta.decode(meta.replace(b'"items":3', b'"items":4'))


def test_a_summed_record_is_the_same_bytes_encoded_once() -> None:
    """The checksum is added to the JSON encoded once: the very bytes the record had when
    it was encoded twice (readers of either version agree)."""
    body = TaskBody("job-1", "files", (MiniBatch(0, ["/a", "/b"], 2), MiniBatch(2, ["/é"], 1)))
    rest = {k: v for k, v in json.loads(body.encode()).items() if k != "sum"}
    assert body.encode() == dumps({**rest, "sum": content_sum(rest)}) == dumps_summed(rest)
    meta = ResultMeta("000000007.a1.e1", "n1", (FULL, Outcome(8, "succeeded")))
    data = meta.encode()
    obj = json.loads(data[: FOOTER.unpack(data[-FOOTER.size :])[1]])
    rest = {k: v for k, v in obj.items() if k != "sum"}
    assert data[: -FOOTER.size] == dumps({**rest, "sum": content_sum(rest)})


def test_a_record_laid_out_otherwise_is_checked_on_its_content() -> None:
    """Spaces, another key order, the sum first: the checksum still holds (the content is
    encoded again); an edit is still refused."""
    meta = ResultMeta("000000007.a1.e1", "n1", (FULL, Outcome(8, "succeeded")))
    data = meta.encode()
    obj = json.loads(data[: FOOTER.unpack(data[-FOOTER.size :])[1]])
    spaced = json.dumps({"sum": obj["sum"], **obj}, indent=1).encode()
    assert ResultMeta.decode(spaced) == meta
    with pytest.raises(RecordError, match="checksum"):
        ResultMeta.decode(spaced.replace(b'"pid": 42', b'"pid": 43'))


@pytest.mark.parametrize(
    "obj",
    [
        FULL.to_json(),
        {"index": 3, "status": "succeeded", "elapsed_s": 1, "run_method_s": 0.5},
        {"index": 3, "status": "timeout", "pid": 9, "later": [1], "error_file": "/e"},
        {"index": 0, "status": "requeued"},
    ],
)
def test_the_common_outcome_path_reads_as_the_checked_one(obj: dict[str, Any]) -> None:
    """Outcome.from_json's one-pass path gives what the field-by-field reading gives, a
    fresh ``extra`` each when it has none, floats for the times."""
    fast = Outcome.from_json(obj)
    assert fast == Outcome._checked(obj)
    assert all(isinstance(v, float) for v in (fast.elapsed_s, fast.run_method_s))
    if "extra" not in obj:  # a default of its own, never one shared
        fast.extra["x"] = 1
        assert Outcome.from_json(obj).extra == {}
