"""The node's log files of a job: ``_main.txt`` and one ``<process>.txt`` per worker.

Each file has exactly one writer (this node's agent), so plain appends are safe even
on a shared file system. Values from the job (error messages, names) are escaped to
one line and no file is written through a link (prsd/logline.py).
"""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from prsd.logline import append_lines
from prsd.spool.dirfd import UnsafeFolder, open_under
from prsd.spool.layout import mb_id

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.wire.records import Outcome


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def host_ip() -> str:
    """This machine's primary IP address (for the per-worker logs), or 127.0.0.1."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))
            return str(s.getsockname()[0])
    except OSError:
        return "127.0.0.1"


def append_line(path: Path, line: str, job: Path) -> None:
    """Append ``line`` with the time now (escaped to one line; never through a link), to
    a log of the job whose folder is ``job`` (as :func:`append_stamped`)."""
    append_stamped(path, [f"{_now()} {line}"], job)


def stamped(line: str) -> str:
    """``line`` with the time now, as :func:`append_line` writes it (for batching)."""
    return f"{_now()} {line}"


def append_stamped(path: Path, lines: list[str], job: Path) -> None:
    """Append lines made by :func:`stamped`, in one open and one write, to a log of the
    job whose folder is ``job``. A missing log folder is made inside ``job`` only, no
    link followed, while it exists: the last lines of a job removed meanwhile
    (``prsctl gc`` as its workers retire) go with it, and no folder of it is made again.

    Raises:
        UnsafeFolder: a folder between ``job`` and the file is a link.
    """
    try:
        append_lines(path, lines)
        return
    except FileNotFoundError:
        if not _made_inside(job, path.parent):
            return
    try:
        append_lines(path, lines)
    except FileNotFoundError:
        if os.path.lexists(job):
            raise  # else removed just now: dropped as above


def _made_inside(job: Path, folder: Path) -> bool:
    """Make ``folder`` inside ``job``; False where ``job`` is gone."""
    try:
        fd = open_under(job, folder.relative_to(job).parts, create_mode=0o755)
    except UnsafeFolder:
        if not os.path.lexists(job):
            return False
        raise
    os.close(fd)
    return True


def batch_record(outcome: Outcome, ip: str) -> str:
    """One line of ``sys/node/<node>/<process>.txt`` for a finished mini-batch."""
    o = outcome
    return (
        f"mini-batch {mb_id(o.index)} {o.status}: ip={ip} pid={o.pid} items={o.items} "
        f"succeeded={o.succeeded_items} failed={o.failed_items} start={o.start_time} "
        f"elapsed_s={o.elapsed_s:.6f} process_time_s={o.process_time_s:.6f} "
        f"run_method_s={o.run_method_s:.6f}" + (f" error={o.error}" if o.error else "")
    )
