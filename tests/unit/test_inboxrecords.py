"""The leader's inbox records (prsd/spool/inboxrecords.py) on real files."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import pytest

from prsd.spool.inboxrecords import read_seen, refusals, seen_bytes
from prsd.spool.readsafe import UntrustedFile
from prsd.wire.fields import RecordError

if TYPE_CHECKING:
    from pathlib import Path


def test_first_sightings_read_back_and_bad_entries_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "inbox_seen.json"
    path.write_bytes(seen_bytes({("a", 1): 10.0, ("b", 2): 20.5}))
    assert read_seen(path) == {("a", 1): 10.0, ("b", 2): 20.5}
    doc = json.loads(path.read_bytes())
    doc["seen"].append({"name": 3, "ino": "x", "since": 1})
    path.write_text(json.dumps(doc))
    assert read_seen(path) == {("a", 1): 10.0, ("b", 2): 20.5}
    path.write_text("[]")
    with pytest.raises(RecordError):
        read_seen(path)
    link = tmp_path / "link.json"
    link.symlink_to(path)
    with pytest.raises(UntrustedFile):
        read_seen(link)


def test_refusals_skip_what_the_daemons_did_not_write(tmp_path: Path) -> None:
    record = {"inbox_name": "x", "uid": 1001, "gid": 1002, "at": "2026-01-02T03:04:05+00:00"}
    (tmp_path / "one.json").write_text(json.dumps(record))
    (tmp_path / "old.json").write_text(json.dumps({**record, "gid": None}))
    (tmp_path / "bad.json").write_text(json.dumps({**record, "at": "yesterday"}))
    (tmp_path / "one").mkdir()
    found = {r.aside: r for r in refusals(tmp_path)}
    assert set(found) == {"one", "old"}
    assert (found["one"].uid, found["one"].gid, found["old"].gid) == (1001, 1002, None)
    assert found["one"].at == 1767323045.0
    if os.geteuid() == 0:  # a record another user wrote is not believed
        os.chown(tmp_path / "one.json", 4321, 4321)
        assert {r.aside for r in refusals(tmp_path)} == {"old"}
