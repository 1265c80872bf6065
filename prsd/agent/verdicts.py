"""Pure decisions of the agent: how a worker's death is classified.

``oom`` is said only with evidence, because "out of memory" sends users to resize
machines: the kernel counted an OOM kill in the worker's cgroup while it ran and
the worker died of a SIGKILL prsd did not send; or the worker's memory was near
its limit (RSS near the RAM or cgroup limit, or its address space near its
``RLIMIT_AS``) when a signal prsd did not send ended it (an allocator that aborts,
the OOM killer, earlyoom). Any other death while running is ``crashed``.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass

from prsd.wire.records import CRASHED, OOM, TIMEOUT

NEAR_LIMIT = 0.9  # of the limit: "near"


@dataclass(frozen=True)
class ExitInfo:
    """How a worker process ended."""

    returncode: int
    signal_name: str  # "" when it exited by itself
    sent_by_prsd: bool

    def describe(self, process_name: str) -> str:
        """``process002 exits with returncode -9 (SIGKILL, not sent by prsd)``."""
        return f"{process_name} exits with {self.summary()}"

    def summary(self) -> str:
        """``returncode -9 (SIGKILL, not sent by prsd)``, or ``returncode 3``."""
        if not self.signal_name:
            return f"returncode {self.returncode}"
        who = "sent by prsd" if self.sent_by_prsd else "not sent by prsd"
        return f"returncode {self.returncode} ({self.signal_name}, {who})"


@dataclass(frozen=True)
class MemoryEvidence:
    """What was known about the worker's memory when it died."""

    kernel_oom_kills: int = 0  # OOM kills counted in its cgroup while it lived
    ram_fraction: float = 0.0  # peak RSS / RAM or cgroup limit
    address_space_fraction: float = 0.0  # peak VMS / RLIMIT_AS (0 when unlimited)
    limit_bytes: int = 0  # the worker's own memory limit (its cgroup's), 0: none

    @property
    def near_limit(self) -> bool:
        return max(self.ram_fraction, self.address_space_fraction) >= NEAR_LIMIT


def classify_exit(
    exit_info: ExitInfo, *, timed_out: bool, memory: MemoryEvidence | None = None
) -> str:
    """The attempt status for a worker that ended while running a mini-batch.

    ``timeout`` when prsd stopped it for time; ``oom`` with evidence (see the module
    header); else ``crashed``.
    """
    if timed_out:
        return TIMEOUT
    if memory is None or exit_info.sent_by_prsd or not exit_info.signal_name:
        return CRASHED
    if memory.kernel_oom_kills and exit_info.returncode == -signal.SIGKILL:
        return OOM
    if memory.near_limit:
        return OOM
    return CRASHED


def oom_reason(memory: MemoryEvidence) -> str:
    """Why an exit was called ``oom``, for the error column."""
    if memory.kernel_oom_kills and memory.limit_bytes:
        mib = memory.limit_bytes / 1024**2
        return (
            f"the kernel's OOM killer ended it at the worker memory limit of {mib:g} MiB "
            "(resources.max_memory_per_worker or PRSD_WORKER_MEMORY_MAX)"
        )
    if memory.kernel_oom_kills:
        return "the kernel's OOM killer ended it"
    pct = 100.0 * max(memory.ram_fraction, memory.address_space_fraction)
    what = "RLIMIT_AS" if memory.address_space_fraction >= memory.ram_fraction else "memory"
    return f"killed for memory: it used {pct:.0f}% of its {what} limit"
