"""What ``prsctl status`` says of the inbox: a summary, never thousands of rows.

The table lists at most :data:`MAX_QUEUED_ROWS` folders still waiting in the inbox;
the rest are counted ("5000 queued folders in the inbox, 4990 without job.yaml"). The
folders the leader refused (prsd/leader/intake/inboxsweep.py: a name that is not UTF-8, a
folder that stayed without job.yaml) are read from their records in
``jobs/.refused/`` and reported with their reason, the newest few by name.

Reading costs one listing of the inbox, one ``lstat`` per folder and one listing of
``jobs/.refused/``. Errors: none raised; an unreadable record is skipped.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prsd.jobspec.load import JOB_FILES
from prsd.spool.inboxrecords import inbox_counts, refusal_documents

if TYPE_CHECKING:
    from prsd.spool.layout import SpoolLayout

MAX_QUEUED_ROWS = 20
MAX_REFUSED_SHOWN = 5


@dataclass
class InboxSummary:
    """The inbox's folders (dot names, a copy in progress, not counted) and the refused ones."""

    folders: int = 0
    without_job_file: int = 0
    refused: list[dict[str, Any]] = field(default_factory=list)  # newest first
    refused_count: int = 0

    def lines(self, shown_rows: int) -> list[str]:
        """Plain sentences for the table view (none when there is nothing to say)."""
        said = []
        if self.folders > shown_rows:
            said.append(
                f"{self.folders} queued folders in the inbox, {self.without_job_file} without "
                f"job.yaml ({shown_rows} listed above)"
            )
        elif self.without_job_file:
            said.append(f"{self.without_job_file} inbox folders without job.yaml (not yet jobs)")
        if self.refused_count:
            said.append(
                f"{self.refused_count} inbox folders refused by the leader (jobs/.refused/):"
            )
            said.extend(
                f"  {r.get('inbox_name', '?')}: {r.get('reason', '?')}" for r in self.refused
            )
            if self.refused_count > len(self.refused):
                said.append(f"  ... and {self.refused_count - len(self.refused)} more")
        return said

    def to_json(self) -> dict[str, Any]:
        return {
            "folders": self.folders,
            "without_job_yaml": self.without_job_file,
            "refused": self.refused_count,
            "refused_latest": self.refused,
        }


def inbox_summary(spool: SpoolLayout) -> InboxSummary:
    """Count the inbox's folders and read the newest refusal records."""
    folders, without = inbox_counts(spool.inbox, JOB_FILES)
    count, refused = refusal_documents(spool.refused, MAX_REFUSED_SHOWN)
    return InboxSummary(folders, without, refused, count)


def queued_in_inbox(spool: SpoolLayout, docs: list[dict[str, Any]]) -> set[str]:
    """The ids of ``docs`` that were inbox folders when read: Queued, or Starting, with no
    job folder under ``jobs/``. A folder the leader moves aside (refused) between the
    listing and this check is still one of them: it never became a job."""
    return {
        str(d.get("job_id"))
        for d in docs
        if d.get("state") in ("Queued", "Starting")
        and not os.path.lexists(spool.jobs / str(d.get("job_id")))
    }


def trim_queued(spool: SpoolLayout, docs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """``docs`` with at most :data:`MAX_QUEUED_ROWS` inbox folders; how many of those were kept."""
    queued = queued_in_inbox(spool, docs)
    kept: list[dict[str, Any]] = []
    shown_queued = 0
    for d in docs:
        if d.get("job_id") in queued:
            if shown_queued >= MAX_QUEUED_ROWS:
                continue
            shown_queued += 1
        kept.append(d)
    return kept, shown_queued
