"""The leader's log files of a job (docs/logs.md): overview, report CSV, result.

Each file has one writer, the leader of the current epoch. The CSV appends one row
per attempt; a leader that takes a job over reads the keys already written, so an
attempt is never reported twice. Every value from the job (error messages, names, a
result file's fields) is escaped to one line before it is written, and line files
are never appended to through a link (prsd/logline.py).
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from prsd.leader.takeover.resume import read_report_part
from prsd.logline import append_lines, one_line
from prsd.spool.atomic import write_atomic
from prsd.spool.layout import JobLayout, mb_id
from prsd.spool.listing import listing
from prsd.wire.logtree import REPORT_EPOCH_PREFIX, LogTree

if TYPE_CHECKING:
    from prsd.wire.records import Outcome

CSV_COLUMNS = (
    "mini_batch_id",
    "attempt",
    "status",
    "node_id",
    "process_name",
    "pid",
    "items",
    "succeeded_items",
    "failed_items",
    "start_time",
    "elapsed_s",
    "process_time_s",
    "run_method_s",
    "error",
)


def overview_name(when: datetime) -> str:
    """The progress overview file for a moment (rotated daily, local date)."""
    return LogTree(Path()).progress_overview(f"{when:%Y%m%d}").name


def report_parts(layout: JobLayout) -> list[Path]:
    """The report and the parts later leader epochs appended, in epoch order."""
    tree = layout.log_tree
    names = [n for n in listing(tree.job_report) if n.startswith(REPORT_EPOCH_PREFIX)]
    return [tree.report_csv, *(tree.job_report / n for n in names)]


@dataclass(frozen=True)
class AttemptRow:
    outcome: Outcome
    attempt: int
    node_id: str

    def cells(self) -> list[str]:
        """The CSV cells, each one line (a result file's fields are the job's to write:
        its texts are escaped; numbers and a status a decoder checked are one line)."""
        o = self.outcome
        return [
            mb_id(o.index),
            str(self.attempt),
            one_line(o.status),
            one_line(self.node_id),
            one_line(o.process_name),
            str(o.pid) if o.pid else "",
            str(o.items),
            str(o.succeeded_items),
            str(o.failed_items),
            one_line(o.start_time),
            f"{o.elapsed_s:.6f}",
            f"{o.process_time_s:.6f}",
            f"{o.run_method_s:.6f}",
            one_line(o.error),
        ]


class JobLogs:
    """Append-only leader logs of one job."""

    def __init__(self, layout: JobLayout, *, epoch: int = 1) -> None:
        self.layout = layout
        layout.log_tree.job_report.mkdir(parents=True, exist_ok=True)
        # Each leader epoch appends to a file of its own (a deposed leader's last appends
        # can never interleave with its successor's); the leader that ends the job merges
        # them into processed_mini-batches.csv (prsd.leader.takeover.resume.merge_reports).
        self._csv_path = layout.log_tree.report_part(epoch)
        self._written: set[tuple[int, int]] = set()
        for path in report_parts(layout):
            self._written |= _existing_keys(path)
        new = not self._csv_path.exists()
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(self._csv_path, flags, 0o644)  # never through a planted link
        _cut_torn_tail(self._csv_path, fd)
        self._csv = open(fd, "a", newline="", encoding="utf-8")  # noqa: SIM115 - kept open; close()
        self._csv_writer = csv.writer(self._csv)
        if new:
            self._csv_writer.writerow(CSV_COLUMNS)
            self._csv.flush()

    def attempts(self, rows: list[AttemptRow]) -> None:
        """Append attempt rows (skipping any already written by an earlier leader)."""
        fresh = [r for r in rows if (r.outcome.index, r.attempt) not in self._written]
        for row in fresh:
            self._written.add((row.outcome.index, row.attempt))
        if fresh:
            self._csv_writer.writerows(r.cells() for r in fresh)
            self._csv.flush()

    def progress(self, message: str, now: datetime | None = None) -> None:
        """One line in today's job_progress_overview file (and in the leader's view)."""
        when = now or datetime.now().astimezone()
        path = self.layout.log_tree.progress_overview(f"{when:%Y%m%d}")
        stamp = when.replace(tzinfo=None).isoformat(timespec="microseconds")
        append_lines(path, [f"{stamp} {message}"], make_folder=True)
        self.master(f"progress: {message}", when)

    def master(self, message: str, now: datetime | None = None) -> None:
        """One line in sys/master_role.txt (the leader's view: intake, progress, result)."""
        when = (now or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="milliseconds")
        append_lines(self.layout.log_tree.master_role, [f"{when} {message}"], make_folder=True)

    def result(self, text: str) -> None:
        """Replace logs/job_result.txt."""
        write_atomic(self.layout.log_tree.job_result, text.encode())

    def close(self) -> None:
        self._csv.close()


def _cut_torn_tail(path: Path, fd: int) -> None:
    """Cut a row this part's writer was killed in the middle of (ours alone to write).

    Only the last byte is read unless it is not a newline (the whole part then, once).
    """
    size = os.fstat(fd).st_size
    if size == 0:
        return
    rfd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with open(rfd, "rb") as f:
        if os.pread(rfd, 1, size - 1) == b"\n":
            return
        data = f.read(size)
    os.ftruncate(fd, data.rfind(b"\n") + 1)


def _existing_keys(path: Path) -> set[tuple[int, int]]:
    """The attempts a part holds whole rows for (a torn row is written again)."""
    part = read_report_part(path, len(CSV_COLUMNS))
    return {(int(row[0]), int(row[1])) for row in part.rows}
