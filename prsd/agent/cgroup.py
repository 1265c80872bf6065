"""Every process a worker starts dies with it: one cgroup per worker, killed whole.

Invariant: once :meth:`Sandbox.enter` returned, the worker and everything it starts
(``setsid``, double forks, daemons) belong to the worker's group, which only root
can leave; :meth:`WorkerGroup.kill` ends them all: ``cgroup.kill`` on v2 (freeze,
then SIGKILL every pid, where the kernel has no ``cgroup.kill``), freeze + SIGKILL
every pid + thaw on a v1 freezer group, SIGKILL every pid until none is left on a
v1 pids or memory group. The worker is put in its group before it is told to
import the entry script, so no user code runs outside it.

Where no cgroup can be created (no delegation, a read-only ``/sys/fs/cgroup``), the
fallback is the process group (the stop ladder) plus a sweep of every process
whose environment carries the worker's ``PRSD_WORKER_TOKEN``: a process that
scrubs its environment escapes that sweep, which docs/supervision.md says.

A process limit (``pids.max``, ``PRSD_WORKER_PIDS_MAX``) is set on the worker's v2
group or in a v1 ``pids`` group, where the machine has one: a fork bomb in ``run()``
gets EAGAIN at the limit. An optional memory limit (``memory.max`` /
``memory.limit_in_bytes``) is set on the group; the kernel's OOM killer then ends the worker, and its ``oom_kill`` count is
the evidence :mod:`prsd.agent.verdicts` needs to say ``oom``.

Groups left by an agent that was killed (its workers die with it, but what they
started may not) are killed and removed when the next agent on the machine starts
its first worker.

Errors: creating a group raises nothing; a hierarchy that cannot be written is
skipped (the next candidate is tried) and :attr:`Sandbox.notes` says why.
"""

from __future__ import annotations

import errno
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from prsd.agent.cgroupplan import Hierarchy, Plan, choose, hierarchies, move_note
from prsd.agent.memwatch import MemoryCgroup, oom_kills

TOKEN_VARIABLE = "PRSD_WORKER_TOKEN"
KILL_WAIT_S = 5.0
_POLL_S = 0.01


@dataclass
class WorkerGroup:
    """One worker's cgroups (a kill group and, maybe, a memory group) or the sweep."""

    token: str
    kill_folder: Path | None = None
    kill_version: int = 0
    memory: MemoryCgroup | None = None
    pids_folder: Path | None = None  # where pids.max is set
    final_oom_kills: int | None = None
    removed: bool = False

    def folders(self) -> list[Path]:
        found = [self.kill_folder] if self.kill_folder is not None else []
        if self.pids_folder is not None and self.pids_folder not in found:
            found.append(self.pids_folder)
        if self.memory is not None and self.memory.folder not in found:
            found.append(self.memory.folder)
        return found

    def oom_kills(self) -> int | None:
        """The kernel's OOM kills in the memory group (kept after it is removed)."""
        if self.removed:
            return self.final_oom_kills
        return oom_kills(self.memory)

    def pids(self) -> set[int]:
        """Every process now in the worker's groups (or carrying its token)."""
        if not self.folders():
            return _pids_with_token(self.token)
        pids: set[int] = set()
        for folder in self.folders():
            pids |= _read_pids(folder)
        return pids

    def kill(self) -> None:
        """SIGKILL every process of the worker's groups; wait (bounded) until none is left."""
        if self.kill_folder is not None and self.kill_version == 2:
            if not _write(self.kill_folder / "cgroup.kill", "1"):
                _frozen_kill(self.kill_folder, "cgroup.freeze", "1", "0")
        elif self.kill_folder is not None and (self.kill_folder / "freezer.state").exists():
            _frozen_kill(self.kill_folder, "freezer.state", "FROZEN", "THAWED")
        deadline = time.monotonic() + KILL_WAIT_S
        while True:
            left = self.pids()
            if not left or time.monotonic() > deadline:
                return
            _kill_all(left)
            time.sleep(_POLL_S)

    def kill_and_remove(self) -> None:
        """Kill everything, remember the OOM count, and remove the groups."""
        if self.removed:
            return
        self.kill()
        self.final_oom_kills = oom_kills(self.memory)
        self.removed = True
        for folder in self.folders():
            try:
                folder.rmdir()
            except OSError:
                pass  # a process that would not die keeps it; the count is kept anyway


@dataclass
class Sandbox:
    """This agent's way of grouping workers, chosen once from what the machine offers."""

    plan: Plan
    prefix: str = field(default_factory=lambda: f"prsd.{os.getpid()}")
    notes: list[str] = field(default_factory=list)
    _count: int = 0
    _kill: Hierarchy | None = None
    _memory: Hierarchy | None = None
    _pids: Hierarchy | None = None
    _chosen: bool = False

    @classmethod
    def from_machine(cls) -> Sandbox:
        """The plan for this process, from ``/proc/self`` (no cgroup is created yet)."""
        try:
            found = hierarchies(
                Path("/proc/self/cgroup").read_text(), Path("/proc/self/mountinfo").read_text()
            )
        except OSError:
            found = []
        v2 = [h for h in found if h.version == 2]
        controllers = _read_words(Path(v2[0].folder) / "cgroup.controllers") if v2 else set()
        return cls(choose(found, frozenset(controllers)))

    def describe(self) -> str:
        """One line for the job's log: how workers are grouped here."""
        self._choose()
        kill = _name(self._kill) if self._kill else "process group + environment sweep"
        memory = _name(self._memory) if self._memory else "none"
        return f"worker cgroups: kill by {kill}; memory limits by {memory}"

    def move_note(self) -> str | None:
        """A line for the job's log if moving a worker into its group is slow here."""
        self._choose()
        return move_note(self._kill)

    def memory_limit_unenforced(self) -> bool:
        """True when no hierarchy here can hold a memory limit."""
        self._choose()
        return self._memory is None

    def new_token(self) -> str:
        """A name for the next worker: its groups' name and its ``PRSD_WORKER_TOKEN``."""
        self._count += 1
        return f"{self.prefix}.{self._count}"

    def enter(
        self, pid: int, token: str, memory_max_bytes: int | None, pids_max: int | None = None
    ) -> WorkerGroup:
        """Create the worker's groups (named ``token``), move ``pid`` in, set its limits."""
        self._choose()
        name = token
        group = WorkerGroup(token=name)
        if self._kill is not None:
            folder = _make(Path(self._kill.folder) / name, pid)
            if folder is not None:
                group.kill_folder, group.kill_version = folder, self._kill.version
        if self._memory is not None:
            group.memory = self._memory_group(name, pid, memory_max_bytes)
        if self._pids is not None and pids_max:
            group.pids_folder = self._pids_group(name, pid, pids_max)
        return group

    def pids_limit_unenforced(self) -> bool:
        """True when no hierarchy here can hold ``pids.max``."""
        self._choose()
        return self._pids is None

    def _pids_group(self, name: str, pid: int, limit: int) -> Path | None:
        assert self._pids is not None
        target = Path(self._pids.folder) / name
        if self._pids.version == 2:  # the kill group itself (checked in _choose)
            return target if _write(target / "pids.max", str(limit)) else None
        folder = _make(target, pid)
        if folder is None or not _write(folder / "pids.max", str(limit)):
            return None
        return folder

    def _memory_group(self, name: str, pid: int, limit: int | None) -> MemoryCgroup | None:
        assert self._memory is not None
        target = Path(self._memory.folder) / name
        if self._memory.version == 2:
            if self._kill is None or Path(self._kill.folder) != Path(self._memory.folder):
                return None
            if not _write(target / "memory.max", str(limit) if limit else "max"):
                return None
            _write(target / "memory.swap.max", "0")
            return MemoryCgroup(target, "memory.max", "memory.events")
        folder = _make(target, pid)
        if folder is None:
            return None
        if limit:
            _write(folder / "memory.limit_in_bytes", str(limit))
            _write(folder / "memory.memsw.limit_in_bytes", str(limit))
        return MemoryCgroup(folder, "memory.limit_in_bytes", "memory.oom_control")

    def sweep_stale(self) -> int:
        """Kill and remove worker groups left by agents that are gone (killed, crashed).

        A group is named ``prsd.<agent pid>.<n>``; one whose agent pid no longer runs
        is stale. Returns how many groups were removed.
        """
        self._choose()
        removed = 0
        for h in {h for h in (self._kill, self._memory) if h is not None}:
            for folder in _stale_groups(Path(h.folder)):
                version = h.version if h is self._kill else 0
                WorkerGroup(folder.name, folder, version).kill_and_remove()
                removed += 1
        return removed

    def _choose(self) -> None:
        """Find (once) the first hierarchy of each role in which a group can be made."""
        if self._chosen:
            return
        self._chosen = True
        for h in self.plan.kill:
            why = _try_make(Path(h.folder))
            if why is None:
                self._kill = h
                break
            self.notes.append(f"cannot create cgroups in {h.folder}: {why}")
        for h in self.plan.memory:
            if h.version == 2 and (h != self._kill or not _enable_memory(Path(h.folder))):
                continue
            if h.version == 2 or _try_make(Path(h.folder)) is None:
                self._memory = h
                break
        for h in self.plan.pids:
            if h.version == 2 and (h != self._kill or not _enable(Path(h.folder), "pids")):
                continue
            if h.version == 2 or _try_make(Path(h.folder)) is None:
                self._pids = h
                break


def _stale_groups(parent: Path) -> list[Path]:
    found: list[Path] = []
    try:
        entries = list(parent.iterdir())
    except OSError:
        return found
    for folder in entries:
        parts = folder.name.split(".")
        if len(parts) == 3 and parts[0] == "prsd" and parts[1].isdigit() and parts[2].isdigit():
            pid = int(parts[1])
            if pid != os.getpid() and not psutil.pid_exists(pid):
                found.append(folder)
    return found


def _name(h: Hierarchy) -> str:
    what = "cgroup v2" if h.version == 2 else f"cgroup v1 {','.join(sorted(h.controllers))}"
    return f"{what} ({h.folder})"


def _try_make(parent: Path) -> str | None:
    """None when a child group can be created (and removed) under ``parent``; else why."""
    probe = parent / f"prsd.probe.{os.getpid()}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _make(folder: Path, pid: int) -> Path | None:
    try:
        folder.mkdir()
    except FileExistsError:
        pass
    except OSError:
        return None
    if _write(folder / "cgroup.procs", str(pid)):
        return folder
    try:
        folder.rmdir()
    except OSError:
        pass
    return None


def _enable_memory(folder: Path) -> bool:
    return _enable(folder, "memory")


def _enable(folder: Path, controller: str) -> bool:
    """Hand a v2 controller (``memory``, ``pids``) to this cgroup's children.

    The v2 rule "no processes in a cgroup whose controllers are handed down" means
    the agent first moves itself into a leaf (``prsd.agent``) of its own cgroup.
    """
    if controller in _read_words(folder / "cgroup.subtree_control"):
        return True
    if _write(folder / "cgroup.subtree_control", f"+{controller}"):
        return True
    leaf = folder / "prsd.agent"
    if folder.parent == folder or _make(leaf, os.getpid()) is None:
        return False
    return _write(folder / "cgroup.subtree_control", f"+{controller}")


def _frozen_kill(folder: Path, state_file: str, frozen: str, thawed: str) -> None:
    """Freeze the group (no fork can race the kill), SIGKILL every pid, thaw."""
    if not _write(folder / state_file, frozen):
        return
    deadline = time.monotonic() + KILL_WAIT_S
    while time.monotonic() < deadline:
        state = _read_words(folder / state_file)
        if state & {"FROZEN", "1"} or not state:
            break
        time.sleep(_POLL_S)
    _kill_all(_read_pids(folder))
    _write(folder / state_file, thawed)


def _kill_all(pids: set[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _read_pids(folder: Path) -> set[int]:
    return {int(w) for w in _read_words(folder / "cgroup.procs") if w.isdigit()}


def _read_words(path: Path) -> set[str]:
    try:
        return set(path.read_text().split())
    except OSError:
        return set()


def _write(path: Path, text: str) -> bool:
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as exc:
        return exc.errno == errno.ESRCH and path.name == "cgroup.procs"
    return True


def _pids_with_token(token: str) -> set[int]:
    """Processes whose environment carries ``PRSD_WORKER_TOKEN=token`` (the fallback)."""
    found: set[int] = set()
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(TOKEN_VARIABLE) == token:
                found.add(proc.pid)
        except (psutil.Error, OSError):
            continue
    return found


_NODE_SANDBOX: list[Sandbox] = []


def node_sandbox() -> Sandbox:
    """The sandbox of this agent process (chosen, and stale groups swept, at the first call)."""
    if not _NODE_SANDBOX:
        sandbox = Sandbox.from_machine()
        sandbox.sweep_stale()
        _NODE_SANDBOX.append(sandbox)
    return _NODE_SANDBOX[0]
