"""``origin.json`` and ``owner.json`` as typed records: each round-trips, an older record
still reads, and every bad one is a BadRecord (the owner's also an OwnerRecordError)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from prsd.errors import SpoolError
from prsd.spool.badrecord import BadRecord
from prsd.spool.jobowner import JobOwner, OwnerRecordError, read_job_owner, write_job_owner
from prsd.spool.layout import SpoolLayout
from prsd.spool.originrecord import MAX_ORIGIN_BYTES, Origin, read_origin_record
from prsd.spool.readsafe import UntrustedFile

if TYPE_CHECKING:
    from pathlib import Path


def test_origin_round_trips_and_an_older_record_reads(tmp_path: Path) -> None:
    origin = Origin("/home/alice/job", "nightly", "sha256:abc")
    assert Origin.from_json(origin.to_json()) == origin
    assert json.loads(origin.to_json())["schema"] == 1
    before = json.dumps({"job_dir": "/home/alice/job", "name": "", "code": "x"}).encode()
    assert Origin.from_json(before) == Origin("/home/alice/job", "", "x")  # no schema: v1
    assert Origin.from_json(b"{}") == Origin()
    path = tmp_path / "origin.json"
    path.write_bytes(origin.to_json())
    assert read_origin_record(path) == origin


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b'{"job_dir": "relative/job"}', "not an absolute path"),
        (b'{"job_dir": 7}', "job_dir is int"),
        (b'{"name": ["a"]}', "name is list"),
        (b'{"schema": 2, "job_dir": "/a"}', "newer than this prsd reads"),
        (b"[]", "list where an object"),
        (b"{", "not JSON"),
    ],
)
def test_origin_refuses_bad_input(data: bytes, said: str) -> None:
    with pytest.raises(BadRecord, match=said):
        Origin.from_json(data)


def test_an_origin_file_is_read_without_a_link_and_within_its_size(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_bytes(Origin("/a").to_json())
    link = tmp_path / "origin.json"
    link.symlink_to(real)
    with pytest.raises(UntrustedFile):
        read_origin_record(link)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (MAX_ORIGIN_BYTES + 1))
    with pytest.raises(UntrustedFile):
        read_origin_record(big)


def test_owner_record_round_trips_and_an_older_record_reads(tmp_path: Path) -> None:
    layout = SpoolLayout(tmp_path).job("job-1")
    layout.root.mkdir(parents=True)
    write_job_owner(layout, JobOwner(1234, 1235, "alice"))
    assert read_job_owner(layout) == JobOwner(1234, 1235, "alice")
    assert json.loads(layout.owner_record.read_bytes())["schema"] == 1
    before = json.dumps({"gid": 7, "uid": 8, "user": "bob"}, sort_keys=True).encode()
    assert JobOwner.from_json(before) == JobOwner(8, 7, "bob")


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b'{"uid": true, "gid": 1}', "uid is a boolean"),
        (b'{"uid": 1}', "gid is missing"),
        (b'{"uid": 1.5, "gid": 1}', "uid is float"),
        (b'{"uid": -1, "gid": 1}', "does not hold integer uid and gid"),
        (b'{"uid": 1, "gid": 1, "user": 3}', "user is int"),
        (b'{"schema": 2, "uid": 1, "gid": 1}', "newer than this prsd reads"),
        (b"[1]", "list where an object"),
        (b"not json", "not JSON"),
    ],
)
def test_owner_record_refuses_bad_input_as_one_bad_record(data: bytes, said: str) -> None:
    with pytest.raises(OwnerRecordError, match=said) as caught:
        JobOwner.from_json(data)
    assert isinstance(caught.value, BadRecord) and isinstance(caught.value, SpoolError)
