"""The plan stream's record format (prsd.leader.plan.planwire): round trips, cuts, refusals."""

from __future__ import annotations

import pytest

from prsd.leader.plan.planwire import (
    PlanWireError,
    Record,
    RecordReader,
    decode,
    encode,
)
from prsd.wire.records import MiniBatch

RECORDS = [
    Record("mb", mb=MiniBatch(0, ["/d/a.txt", "/d/new\nline.txt"], 2)),
    Record("mb", mb=MiniBatch(1, {"path": "/t/g.csv", "format": "csv", "rows": 3}, 3, {"k": "é"})),
    Record("skip", path="/d/fifo", why="not a regular file (a FIFO)"),
    Record("order", order={"units": [0, -1, 1], "kept": 1}),
    Record("alive"),
    Record("error", msg="cannot read input x: [Errno 13] Permission denied: '/b/s.csv'"),
    Record("end"),
]


def test_every_record_comes_back_whole_whatever_the_cuts() -> None:
    data = b"".join(encode(r) for r in RECORDS)
    assert data.count(b"\n") == len(RECORDS), "a newline in a path is escaped"
    for cut in (1, 2, 7, 64, len(data)):
        reader = RecordReader()
        got: list[Record] = []
        for start in range(0, len(data), cut):
            got += reader.feed(data[start : start + cut])
        assert got == RECORDS, cut
        assert reader.partial == 0


def test_a_partial_line_waits_and_is_counted() -> None:
    line = encode(Record("end"))
    reader = RecordReader()
    assert reader.feed(line[:-3]) == []
    assert reader.partial == len(line) - 3
    assert reader.feed(line[-3:]) == [Record("end")]


@pytest.mark.parametrize(
    ("line", "words"),
    [
        (b"not json", "not JSON"),
        (b"[1, 2]", "object"),
        (b'{"t": "boom"}', "unknown type 'boom'"),
        (b'{"x": 1}', "t is missing"),
        (b'{"t": "mb", "mb": {"i": 0}}', "payload"),
        (b'{"t": "skip", "path": "/a"}', "why is missing"),
        (b'{"t": "error", "msg": 3}', "msg is int"),
        (b'{"t": "order", "order": []}', "order is list"),
    ],
)
def test_a_bad_record_is_refused_with_the_reason(line: bytes, words: str) -> None:
    with pytest.raises(PlanWireError) as caught:
        decode(line)
    assert words in str(caught.value)
    assert "the input planner sent a bad record" in str(caught.value)


def test_a_line_over_the_bound_is_refused_before_it_ends() -> None:
    reader = RecordReader(max_line=100)
    reader.feed(b'{"t": "skip", "path": "' + b"a" * 70)
    with pytest.raises(PlanWireError, match="more than 100 bytes"):
        reader.feed(b"a" * 30)


def test_records_before_a_bad_line_are_not_lost_to_the_caller() -> None:
    """A bad line raises; the good lines fed with it were complete records (the job
    fails on the bad one either way)."""
    reader = RecordReader()
    assert reader.feed(encode(Record("alive"))) == [Record("alive")]
    with pytest.raises(PlanWireError):
        reader.feed(b"garbage\n")
