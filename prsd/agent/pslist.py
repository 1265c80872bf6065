"""Every process on the machine, ``ps``-style, read straight from ``/proc``.

The resource monitor writes one such snapshot per sample (``os/<hour>/processes_<minute>``)
and takes one when a job ends on the node, so its cost is on every job's way out: a
machine of a few hundred processes is read with two small reads each (``stat`` and
``cmdline``) and one ``fstat`` (the user), where psutil opened six files a process and
read the CPU count again for each. The CPU percent is the process's CPU time since the
previous sample of the same :class:`PsLister` over the wall time between them (per core,
as ``ps`` and psutil give it: a busy process of four threads shows up to 400); 0.0 the
first time a process is seen.

The user is the owner of ``/proc/<pid>``, the process's effective user, as ``ps``
shows it. A process that ends while it is read is left out; a missing ``/proc`` gives
an empty list. Nothing here raises.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import time
from dataclasses import dataclass

import psutil

PROC = "/proc"

STATES = {
    "R": "running",
    "S": "sleeping",
    "D": "disk-sleep",
    "T": "stopped",
    "t": "tracing-stop",
    "Z": "zombie",
    "X": "dead",
    "x": "dead",
    "K": "wake-kill",
    "W": "waking",
    "P": "parked",
    "I": "idle",
}
"""The kernel's one-letter states, named as psutil names them."""

_TICKS_PER_S = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class PsRow:
    pid: int
    ppid: int
    user: str
    cpu_percent: float
    rss: int
    status: str
    command: str


@dataclass(frozen=True)
class StatFields:
    """What the snapshot needs from one ``/proc/<pid>/stat`` line."""

    name: str
    state: str
    ppid: int
    cpu_ticks: int  # utime + stime
    start_ticks: int  # since boot: tells a reused pid from the process seen before
    rss_pages: int


def parse_stat(line: str) -> StatFields | None:
    """The fields of a ``stat`` line; None when it is not one.

    The name (``comm``) sits in parentheses and may hold spaces and parentheses itself,
    so the fields are counted from the last ``)``.
    """
    open_at, close_at = line.find("("), line.rfind(")")
    if open_at < 0 or close_at < open_at:
        return None
    rest = line[close_at + 2 :].split()
    if len(rest) < 22:
        return None
    try:
        return StatFields(
            name=line[open_at + 1 : close_at],
            state=rest[0],
            ppid=int(rest[1]),
            cpu_ticks=int(rest[11]) + int(rest[12]),
            start_ticks=int(rest[19]),
            rss_pages=int(rest[21]),
        )
    except ValueError:
        return None


@functools.lru_cache(maxsize=1024)
def user_name(uid: int) -> str:
    """The login name of ``uid`` (the uid itself when it has none), looked up once."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


class PsLister:
    """Snapshots of every process; remembers each one's CPU time for the next percent."""

    def __init__(self) -> None:
        self._seen: dict[int, tuple[int, int, float]] = {}  # pid -> start, ticks, when

    def sample(self) -> list[PsRow]:
        """Every process now, in ``/proc``'s order (pids ascending)."""
        try:
            pids = psutil.pids()  # /proc's numeric names
        except OSError:
            return []
        rows: list[PsRow] = []
        seen: dict[int, tuple[int, int, float]] = {}
        for pid in pids:
            read = self._read(pid)
            if read is None:
                continue
            fields, uid, command = read
            now = time.monotonic()
            before = self._seen.get(pid)
            cpu = 0.0
            if before is not None and before[0] == fields.start_ticks and now > before[2]:
                cpu = (fields.cpu_ticks - before[1]) / _TICKS_PER_S / (now - before[2]) * 100
            seen[pid] = (fields.start_ticks, fields.cpu_ticks, now)
            rows.append(
                PsRow(
                    pid=pid,
                    ppid=fields.ppid,
                    user=user_name(uid),
                    cpu_percent=round(max(cpu, 0.0), 1),
                    rss=fields.rss_pages * _PAGE,
                    status=STATES.get(fields.state, fields.state),
                    command=command or f"[{fields.name}]",
                )
            )
        self._seen = seen
        return rows

    def _read(self, pid: int) -> tuple[StatFields, int, str] | None:
        base = f"{PROC}/{pid}"
        try:
            fd = os.open(f"{base}/stat", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            uid = os.fstat(fd).st_uid
            fields = parse_stat(os.read(fd, 4096).decode("utf-8", "replace"))
        except OSError:
            return None
        finally:
            os.close(fd)
        if fields is None:
            return None
        command = ""
        with contextlib.suppress(OSError), open(f"{base}/cmdline", "rb") as f:
            raw = f.read(65536)
            command = raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
        return fields, uid, command
