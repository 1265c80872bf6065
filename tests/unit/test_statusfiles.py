"""A job's status.json and final.json as clients and the leader's fence read them."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from prsd.spool.finalrecord import PRIVATE_FINAL
from prsd.spool.layout import SpoolLayout
from prsd.spool.statusfiles import read_final_document, read_status_document, status_mark

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.spool.layout import JobLayout


def _job(tmp_path: Path) -> JobLayout:
    layout = SpoolLayout(tmp_path / "spool").job("job-1")
    layout.state.mkdir(parents=True)
    return layout


def test_a_status_not_written_yet_or_torn_reads_as_none(tmp_path: Path) -> None:
    layout = _job(tmp_path)
    assert read_status_document(layout) is None and status_mark(layout) is None
    for torn in (b'{"state": "Runn', b"[1, 2]", b'"Running"'):
        layout.status.write_bytes(torn)
        assert read_status_document(layout) is None and status_mark(layout) is None
    layout.status.write_bytes(json.dumps({"state": "Running", "epoch": 3, "seq": 9}).encode())
    assert read_status_document(layout) == {"state": "Running", "epoch": 3, "seq": 9}
    assert status_mark(layout) == (3, 9)
    layout.status.write_bytes(b'{"epoch": "three"}')
    assert status_mark(layout) is None  # no mark to compare: the writer goes ahead


def test_the_final_record_is_read_from_its_private_copy_first(tmp_path: Path) -> None:
    layout = _job(tmp_path)
    assert read_final_document(layout) is None
    layout.final.write_bytes(b'{"state": "Failed", "reason": ""}')
    assert read_final_document(layout) == {"state": "Failed", "reason": ""}
    private = layout.state / PRIVATE_FINAL
    private.write_bytes(b'{"state": "Failed", "reason": "boom"}')
    assert read_final_document(layout) == {"state": "Failed", "reason": "boom"}
    private.write_bytes(b"{")  # torn: the public copy still says the job ended
    assert read_final_document(layout) == {"state": "Failed", "reason": ""}
