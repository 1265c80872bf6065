"""What ``prsctl status`` lists of the inbox: at most MAX_QUEUED_ROWS inbox rows, even when
the leader moves the folders aside between the listing and the trim (real folders)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prsd.cli.inboxview import MAX_QUEUED_ROWS, inbox_summary, trim_queued
from prsd.spool.layout import SpoolLayout

if TYPE_CHECKING:
    from pathlib import Path


def _spool(tmp_path: Path) -> SpoolLayout:
    spool = SpoolLayout(tmp_path)
    for folder in (spool.inbox, spool.jobs):
        folder.mkdir()
    return spool


def _doc(job_id: str, state: str) -> dict[str, object]:
    return {"job_id": job_id, "state": state}


def test_inbox_rows_beyond_the_limit_are_counted_not_listed(tmp_path: Path) -> None:
    spool = _spool(tmp_path)
    docs = [_doc(f"junk{i:03d}", "Queued") for i in range(50)]
    for d in docs:
        (spool.inbox / str(d["job_id"])).mkdir()
    (spool.jobs / "real").mkdir()
    docs.append(_doc("real", "Running"))
    rows, shown = trim_queued(spool, docs)
    assert shown == MAX_QUEUED_ROWS
    assert len(rows) == MAX_QUEUED_ROWS + 1 and rows[-1]["job_id"] == "real"
    summary = inbox_summary(spool)
    assert summary.folders == 50 and summary.without_job_file == 50
    assert "50 queued folders in the inbox" in summary.lines(shown)[0]


def test_folders_moved_aside_after_the_listing_are_still_trimmed(tmp_path: Path) -> None:
    """Read as Queued (or as Starting when already gone), then refused by the leader: the
    folder is neither in the inbox nor under jobs/, and it is no row of its own."""
    spool = _spool(tmp_path)
    docs = [_doc(f"junk{i:03d}", "Queued") for i in range(40)]
    docs += [_doc(f"gone{i:03d}", "Starting") for i in range(40)]
    (spool.jobs / "taken").mkdir()
    docs.append(_doc("taken", "Starting"))
    rows, shown = trim_queued(spool, docs)
    assert shown == MAX_QUEUED_ROWS
    assert [r["job_id"] for r in rows][-1] == "taken"
    assert len(rows) == MAX_QUEUED_ROWS + 1
