"""What enters the worker (the frames, their framing, the mini-batch and the outcome): each
encodes and decodes to itself, and a malformed one is refused with an error naming the
record and the field."""

from __future__ import annotations

import json
from typing import Any

import pytest

from prsd.wire import frames, protocol
from prsd.wire.fields import RecordError
from prsd.wire.records import MiniBatch, Outcome

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


def test_the_frame_reader_puts_frames_together_however_the_bytes_arrive() -> None:
    messages = [frames.Ready(12, 0.5, 9).to_json(), frames.Bye().to_json(), {"ev": "x" * 300}]
    data = b"".join(protocol.encode(m) for m in messages)
    for step in (1, 3, 7, len(data)):
        reader = protocol.FrameBuffer()
        got = []
        for at in range(0, len(data), step):
            reader.feed(data[at : at + step])
            while reader.has_frame():
                got.append(reader.next())
            assert reader.next() is None
        assert got == messages
        assert not reader.partial
    reader = protocol.FrameBuffer()
    reader.feed(data[:-1])
    assert [reader.next(), reader.next(), reader.next()] == [*messages[:2], None]
    assert reader.partial


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (protocol.HEADER.pack(protocol.MAX_FRAME_BYTES + 1), "announced frame of"),
        (protocol.encode_body(b"[1]"), "frame is not a JSON object"),
        (protocol.encode_body(b"\xff{"), "undecodable frame"),
    ],
)
def test_the_frame_reader_refuses_what_is_not_a_frame(data: bytes, message: str) -> None:
    reader = protocol.FrameBuffer()
    reader.feed(protocol.encode({"ev": "bye"}) + data)
    assert reader.next() == {"ev": "bye"}
    with pytest.raises(protocol.ProtocolError, match=message):
        reader.next()


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
