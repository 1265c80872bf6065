"""Task names, task files and result files: encodings and what a torn file looks like."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from prsd.spool.layout import TaskName, parse_done_name, valid_job_id, valid_node_id
from prsd.spool.resultfiles import read_result_meta
from prsd.spool.taskrecords import ResultMeta, TaskBody
from prsd.wire.fields import RecordError
from prsd.wire.records import SUCCEEDED, MiniBatch, Outcome

if TYPE_CHECKING:
    from pathlib import Path


def test_task_name_round_trip_and_order() -> None:
    """Names carry (first mini-batch, attempt, epoch) and sort in input order."""
    t = TaskName(42, 3, 7)
    assert t.name == "000000042.a3.e7"
    assert TaskName.parse(t.name) == t
    assert t.next_attempt(8) == TaskName(42, 4, 8)
    names = sorted([TaskName(100, 1, 1).name, TaskName(9, 1, 1).name])
    assert names == ["000000009.a1.e1", "000000100.a1.e1"]


@pytest.mark.parametrize(
    "name", ["", "42.a1.e1", "000000042.a1", ".tmp-000000042.a1.e1", "000000042.a1.e1/x"]
)
def test_task_name_rejects_strangers(name: str) -> None:
    """Anything but a task file name is ignored."""
    assert TaskName.parse(name) is None


def test_done_name() -> None:
    """Done names are '<task>.<node>'; node ids may contain dots."""
    assert parse_done_name("000000001.a2.e1.node-1.example") == (
        TaskName(1, 2, 1),
        "node-1.example",
    )
    assert parse_done_name("000000001.a2.e1") is None
    assert parse_done_name("000000001.a2.e1.../x") is None


@pytest.mark.parametrize(
    ("node", "ok"),
    [
        ("n1", True),
        ("gpu-vm.01", True),
        ("..", False),
        ("a/b", False),
        (".hidden", False),
        ("a\nb", False),
        ("a..b", False),
        ("x" * 64, False),
    ],
)
def test_node_ids(node: str, ok: bool) -> None:
    """Node ids are safe single path components."""
    assert valid_node_id(node) is ok


def test_job_ids() -> None:
    """Job ids are lower-case, no dots, no slashes."""
    assert valid_job_id("digits-20261122-101010-ab12")
    assert not valid_job_id("Digits")
    assert not valid_job_id("../x")


def test_task_body_round_trip() -> None:
    """A task file decodes to what was encoded."""
    body = TaskBody(
        "job-1", "files", (MiniBatch(0, ["/a", "/b"], 2), MiniBatch(1, ["/c"], 1, {"k": "v"}))
    )
    assert TaskBody.decode(body.encode()) == body


@pytest.mark.parametrize(
    "data", [b"", b"{", b"[]", b'{"v": 99, "job": "j", "kind": "files", "mbs": []}']
)
def test_task_body_garbage(data: bytes) -> None:
    """An unreadable task file is a RecordError saying why, never a KeyError."""
    with pytest.raises(RecordError, match="task file"):
        TaskBody.decode(data)


def test_result_file_round_trip(tmp_path: Path) -> None:
    """Metadata is read from the end of the file; payload ranges point into the file."""
    path = tmp_path / "r.res"
    payload = b"line1\nline2\n"
    outcomes = (Outcome(0, SUCCEEDED, items=2, succeeded_items=2, offset=0, length=len(payload)),)
    path.write_bytes(payload + ResultMeta("000000000.a1.e1", "n1", outcomes).encode())
    meta = read_result_meta(path)
    assert meta is not None
    assert meta.outcomes == outcomes
    o = meta.outcomes[0]
    assert path.read_bytes()[o.offset : o.offset + o.length] == payload


def test_torn_result_is_missing(tmp_path: Path) -> None:
    """A truncated result file reads as absent (the attempt is not used)."""
    path = tmp_path / "r.res"
    outcomes = (Outcome(0, SUCCEEDED, items=1, succeeded_items=1, offset=0, length=3),)
    data = b"abc" + ResultMeta("000000000.a1.e1", "n1", outcomes).encode()
    for cut in (0, 5, len(data) - 1):
        path.write_bytes(data[:cut])
        assert read_result_meta(path) is None
    assert read_result_meta(tmp_path / "absent.res") is None


def test_result_pointing_past_payload_is_rejected(tmp_path: Path) -> None:
    """Metadata whose byte range leaves the payload is treated as torn."""
    path = tmp_path / "r.res"
    outcomes = (Outcome(0, SUCCEEDED, items=1, succeeded_items=1, offset=0, length=999),)
    path.write_bytes(b"abc" + ResultMeta("t", "n", outcomes).encode())
    assert read_result_meta(path) is None
