"""Evidence for calling a worker's death an OOM kill: its memory, and the kernel's count.

A dead process cannot be asked how big it was, so each worker is sampled while it
lives (RSS, address space, its ``RLIMIT_AS``), and the cgroup's ``oom_kill``
counter (cgroup v2 ``memory.events``, or v1 ``memory.oom_control``; both count the
cgroup and its children) is read when the worker starts and when it dies: the
worker's own group when the agent made one (``prsd.agent.cgroup``), else the cgroup
it runs in.
:func:`prsd.agent.verdicts.classify_exit` decides from these. Every read here is best effort: a missing file or a vanished process is "no
evidence", never an error.

A sample is one ``pread`` of ``/proc/<pid>/statm`` on a descriptor opened once (it
refers to that process alone: once the worker is reaped it reads nothing, whatever
process gets its pid) and one ``prlimit``: an agent samples each of its workers five
times a second, and psutil's object per sample (two more reads of ``/proc``) was a
large part of an agent's CPU while its workers slept. :mod:`prsd.agent.workerwatch` drives the samples.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import psutil

from prsd.agent.verdicts import MemoryEvidence

if TYPE_CHECKING:
    from collections.abc import Callable

PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
CGROUP_ROOT = Path("/sys/fs/cgroup")


class OomCounter(Protocol):
    """A worker's own memory group (``prsd.agent.cgroup.WorkerGroup``)."""

    @property
    def memory(self) -> MemoryCgroup | None: ...

    def oom_kills(self) -> int | None: ...


@dataclass(frozen=True)
class MemoryPeak:
    """The largest use seen, as fractions of the limits in force at the time (0 = unknown)."""

    rss_bytes: int = 0
    ram_fraction: float = 0.0  # RSS / min(RAM, cgroup memory.max)
    address_space_fraction: float = 0.0  # VMS / RLIMIT_AS, when RLIMIT_AS is set


@dataclass(frozen=True)
class MemoryCgroup:
    """Where a process's memory cgroup keeps its limit and its OOM-kill count."""

    folder: Path
    limit_file: str  # v2 memory.max, v1 memory.limit_in_bytes
    events_file: str  # v2 memory.events, v1 memory.oom_control (both: "oom_kill N")


def memory_cgroup(pid: int) -> MemoryCgroup | None:
    """The memory cgroup of a process (v1 memory controller, else v2), or None."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            folder = CGROUP_ROOT / "memory" / path.lstrip("/")
            if not folder.is_dir():  # a container sees its own cgroup at the root
                folder = CGROUP_ROOT / "memory"
            return MemoryCgroup(folder, "memory.limit_in_bytes", "memory.oom_control")
    for line in lines:
        if line.startswith("0::"):
            return MemoryCgroup(CGROUP_ROOT / line[3:].lstrip("/"), "memory.max", "memory.events")
    return None


def ram_limit_bytes(cgroup: MemoryCgroup | None) -> int:
    """The memory a process may use: the machine's RAM or its cgroup's limit."""
    limit = int(psutil.virtual_memory().total)
    if cgroup is not None:
        try:
            text = (cgroup.folder / cgroup.limit_file).read_text().strip()
            if text.isdigit():
                limit = min(limit, int(text))
        except OSError:
            pass
    return limit


def oom_kills(cgroup: MemoryCgroup | None) -> int | None:
    """The cgroup's ``oom_kill`` count (kills in it and below), or None if unknown."""
    if cgroup is None:
        return None
    try:
        for line in (cgroup.folder / cgroup.events_file).read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
    except (OSError, ValueError):
        return None
    return None


class MemoryWatch:
    """Samples one worker's memory while it lives; keeps the peak since :meth:`reset`."""

    def __init__(self, pid: int, group: OomCounter | None = None) -> None:
        self.pid = pid
        self.group = group
        own = group.memory if group is not None else None
        self.cgroup = own if own is not None else memory_cgroup(pid)
        self.oom_kills_at_start = self._oom_kills()
        self.ram_limit = ram_limit_bytes(self.cgroup)
        self.peak = MemoryPeak()
        # The mini-batch whose run() is under way (None: none), read before each sample.
        self.running: Callable[[], object] | None = None
        self.peak_of: object = None  # the mini-batch the peak was sampled for
        self.current: object = None  # the mini-batch under way at the last tick
        try:
            self._statm: int | None = os.open(f"/proc/{pid}/statm", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self._statm = None  # gone already: no samples

    def sample(self) -> bool:
        """Take one sample; False once the process is gone (or reaped)."""
        if self._statm is None:
            return False
        try:
            fields = os.pread(self._statm, 128, 0).split()
            soft, _hard = resource.prlimit(self.pid, resource.RLIMIT_AS)
            vms, rss = int(fields[0]) * PAGE_BYTES, int(fields[1]) * PAGE_BYTES
        except (OSError, ValueError, IndexError):
            return False
        if vms == 0:
            return False  # a zombie: exited, its memory already freed
        ram = rss / self.ram_limit if self.ram_limit else 0.0
        space = vms / soft if soft not in (resource.RLIM_INFINITY, -1) and soft > 0 else 0.0
        p = self.peak
        self.peak = MemoryPeak(
            max(p.rss_bytes, rss),
            max(p.ram_fraction, ram),
            max(p.address_space_fraction, space),
        )
        return True

    def close(self) -> None:
        """Let go of the process's ``statm`` (no samples after this)."""
        if self._statm is not None:
            os.close(self._statm)
            self._statm = None

    def reset(self) -> None:
        """Start a new peak (a new mini-batch): an earlier one's memory is no evidence.

        The new peak starts empty and the timer's next samples fill it; no fresh read of
        ``/proc`` here, which cost more than the rest of a tiny mini-batch's hand-off.
        Not the timer's last sample either: it may show the memory of the mini-batch
        before (a worker that filled its address space and let go of it).
        """
        self.peak = MemoryPeak()

    def tick(self) -> bool:
        """One round of the watch: :attr:`running` (if set) says which mini-batch's
        ``run()`` is under way, a new one starts a new peak (:meth:`reset`); then one
        sample. False once the process is gone."""
        running = self.running
        if running is not None:
            now_running = running()
            if now_running is not None and now_running != self.current:
                self.reset()
                self.peak_of = now_running
            self.current = now_running
        return self.sample()

    def kernel_oom_kills_since_start(self) -> int:
        """OOM kills the kernel counted in the worker's cgroup since it started (0 if unknown)."""
        before, after = self.oom_kills_at_start, self._oom_kills()
        if before is None or after is None:
            return 0
        return max(after - before, 0)

    def _oom_kills(self) -> int | None:
        # The worker's own group is removed once it is killed; it keeps its last count.
        if self.group is not None and self.group.memory is not None:
            return self.group.oom_kills()
        return oom_kills(self.cgroup)

    def evidence(self, limit_bytes: int | None, mb: object = None) -> MemoryEvidence:
        """What is known of the worker's memory (``limit_bytes``: its own limit, if any)
        while mini-batch ``mb`` ran: a peak the timer sampled for another mini-batch (a
        worker that died before its next sample) is no evidence for this one."""
        has_group = self.group is not None and self.group.memory is not None
        own_limit = (limit_bytes or 0) if has_group else 0
        peak = self.peak if mb is None or mb == self.peak_of else MemoryPeak()
        return MemoryEvidence(
            self.kernel_oom_kills_since_start(),
            peak.ram_fraction,
            peak.address_space_fraction,
            own_limit,
        )
