"""How a worker's death is classified: crashed, oom (only with evidence), timeout."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from prsd.agent.memwatch import (
    MemoryCgroup,
    MemoryPeak,
    MemoryWatch,
    memory_cgroup,
    oom_kills,
    ram_limit_bytes,
)
from prsd.agent.verdicts import ExitInfo, MemoryEvidence, classify_exit, oom_reason

if TYPE_CHECKING:
    from pathlib import Path

KILL = ExitInfo(-9, "SIGKILL", False)
KILL_BY_PRSD = ExitInfo(-9, "SIGKILL", True)
SEGV = ExitInfo(-11, "SIGSEGV", False)
ABRT = ExitInfo(-6, "SIGABRT", False)
EXIT3 = ExitInfo(3, "", False)
KERNEL = MemoryEvidence(kernel_oom_kills=1)
NEAR_RAM = MemoryEvidence(ram_fraction=0.95)
NEAR_AS = MemoryEvidence(address_space_fraction=0.97)
SMALL = MemoryEvidence(ram_fraction=0.2, address_space_fraction=0.3)


@pytest.mark.parametrize(
    ("exit_info", "memory", "status"),
    [
        (KILL, KERNEL, "oom"),
        (KILL, NEAR_RAM, "oom"),
        (ABRT, NEAR_AS, "oom"),
        (KILL, None, "crashed"),
        (KILL, SMALL, "crashed"),
        (SEGV, SMALL, "crashed"),
        (SEGV, KERNEL, "crashed"),
        (EXIT3, NEAR_RAM, "crashed"),
        (KILL_BY_PRSD, KERNEL, "crashed"),
    ],
)
def test_oom_only_with_evidence(
    exit_info: ExitInfo, memory: MemoryEvidence | None, status: str
) -> None:
    """oom needs a signal prsd did not send plus the kernel's count or memory near its limit."""
    assert classify_exit(exit_info, timed_out=False, memory=memory) == status


def test_timeout_wins() -> None:
    """A worker prsd stopped for time is a timeout, whatever its memory."""
    assert classify_exit(KILL_BY_PRSD, timed_out=True, memory=NEAR_RAM) == "timeout"


def test_reason_names_the_evidence() -> None:
    """The error column says why the exit was called oom."""
    assert "OOM killer" in oom_reason(KERNEL)
    assert oom_reason(NEAR_AS) == "killed for memory: it used 97% of its RLIMIT_AS limit"
    assert oom_reason(NEAR_RAM) == "killed for memory: it used 95% of its memory limit"


@pytest.mark.parametrize(
    ("exit_info", "line"),
    [
        (KILL, "process002 exits with returncode -9 (SIGKILL, not sent by prsd)"),
        (KILL_BY_PRSD, "process002 exits with returncode -9 (SIGKILL, sent by prsd)"),
        (EXIT3, "process002 exits with returncode 3"),
    ],
)
def test_exit_line(exit_info: ExitInfo, line: str) -> None:
    """The _main.txt line: return code, signal name, and who sent the signal."""
    assert exit_info.describe("process002") == line


def test_cgroup_counters_are_read_from_real_files(tmp_path: Path) -> None:
    """oom_kill and the limit come from the cgroup's files; missing files mean unknown."""
    v2 = MemoryCgroup(tmp_path, "memory.max", "memory.events")
    assert oom_kills(v2) is None
    (tmp_path / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\n")
    (tmp_path / "memory.max").write_text("1048576\n")
    assert oom_kills(v2) == 2
    assert ram_limit_bytes(v2) == 1048576
    (tmp_path / "memory.max").write_text("max\n")
    assert ram_limit_bytes(v2) > 1048576, "no limit: the machine's RAM"
    assert oom_kills(None) is None


def test_own_memory_cgroup_is_found() -> None:
    """/proc/<pid>/cgroup names a memory cgroup (v1 or v2) on Linux; a gone pid has none."""
    cgroup = memory_cgroup(os.getpid())
    assert cgroup is not None
    assert cgroup.events_file in ("memory.events", "memory.oom_control")
    assert ram_limit_bytes(cgroup) > 0
    assert memory_cgroup(2**22 + 1) is None


def test_a_peak_sampled_for_another_mini_batch_is_no_evidence() -> None:
    """A worker that filled its address space for mini-batch 5 (and lived) and then
    segfaulted on mini-batch 1 before the next sample: the peak is mini-batch 5's, so
    the crash is not called oom; for mini-batch 5 itself it is evidence."""
    watch = MemoryWatch(os.getpid())
    assert watch.sample()  # a real sample of this process
    watch.peak, watch.peak_of = MemoryPeak(1 << 30, 0.2, 0.97), 5
    segfault = ExitInfo(-11, "SIGSEGV", sent_by_prsd=False)
    assert classify_exit(segfault, timed_out=False, memory=watch.evidence(None, 5)) == "oom"
    assert classify_exit(segfault, timed_out=False, memory=watch.evidence(None, 1)) == "crashed"
    assert watch.evidence(None).near_limit  # no mini-batch named: the peak as sampled
