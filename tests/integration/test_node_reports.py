"""The leader's reading of a job's node reports on real files: each report is decoded
once per change of its file, again after ``REREAD_S`` in any case, and a torn or
vanished one is left out."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from prsd.leader.run.nodereports import REREAD_S, NodeReports
from prsd.spool.atomic import write_atomic
from prsd.spool.layout import JobLayout
from prsd.spool.nodereport import NodeReport

if TYPE_CHECKING:
    from pathlib import Path


def put(layout: JobLayout, report: NodeReport) -> None:
    """As the agent writes its report: a whole new file renamed over the old one."""
    path = layout.node_report(report.node_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, report.encode(), durable=False)


def test_a_report_is_decoded_again_only_when_its_file_changed(tmp_path: Path) -> None:
    layout = JobLayout(tmp_path / "spool" / "jobs" / "j1", "j1")
    a, b = NodeReport("a1", busy=2, workers=2), NodeReport("b2", idle=1, workers=2)
    put(layout, a)
    put(layout, b)
    reader = NodeReports(layout)
    assert reader.read(100.0) == [a, b]
    assert reader.decodes == 2
    assert reader.read(100.5) == [a, b]  # unchanged: from the last decode
    assert reader.decodes == 2

    a2 = replace(a, busy=1, idle=1)  # the same size on disk: only the file's identity differs
    assert len(a2.encode()) == len(a.encode())
    put(layout, a2)
    assert reader.read(101.0) == [a2, b]
    assert reader.decodes == 3

    assert reader.read(101.0 + REREAD_S) == [a2, b]  # both read again after REREAD_S
    assert reader.decodes == 5

    layout.node_report("b2").unlink()
    layout.node_report("c3").write_bytes(b'{"node_id": "c3", "bu')  # torn: left out
    assert reader.read(102.0) == [a2]
    assert NodeReports(layout).read(0.0) == [a2]  # a fresh reader sees the same


def test_a_report_rewritten_in_place_is_seen_by_its_times(tmp_path: Path) -> None:
    """Not renamed over (the same inode) and of the same size: the change time tells."""
    layout = JobLayout(tmp_path / "spool" / "jobs" / "j1", "j1")
    a = NodeReport("a1", busy=2, workers=2)
    put(layout, a)
    reader = NodeReports(layout)
    assert reader.read(1.0) == [a]
    path = layout.node_report("a1")
    before = path.stat()
    a2 = replace(a, busy=1, idle=1)
    while path.stat().st_mtime_ns == before.st_mtime_ns:  # a coarse clock: wait for a tick
        path.write_bytes(a2.encode())
    assert path.stat().st_ino == before.st_ino
    assert reader.read(1.5) == [a2]
