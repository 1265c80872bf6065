"""Where a worker's cgroup can live: the hierarchies this agent sees, and which to use (pure).

Invariant: a plan names only folders inside the agent's *own* cgroup of each
hierarchy (never a sibling's, never the root of a hierarchy the agent was not put
at), so creating worker groups there needs no more than the delegation the agent's
unit grants (systemd ``Delegate=yes``) or root on a machine without systemd.

Preference (docs/supervision.md, "Every process dies with its worker"):

- killing: cgroup v2 (``cgroup.kill``, or freeze and kill), else a v1 freezer
  group (freeze, kill every pid, thaw), else a v1 pids or memory group (kill its
  pids until it is empty), else no group (the caller sweeps by environment marker);
- a memory limit: cgroup v2 when its ``memory`` controller is available to the
  agent's cgroup, else the v1 ``memory`` hierarchy, else none;
- a process limit (``pids.max``): cgroup v2 when its ``pids`` controller is
  available, else the v1 ``pids`` hierarchy, else none.

Which folders can really be written is learnt by trying (``prsd.agent.cgroup``);
this module only reads ``/proc/self/cgroup`` and ``/proc/self/mountinfo`` texts.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

V1_KILL_ORDER = ("freezer", "pids", "memory")
FAVOR_DYNMODS = "favordynmods"
"""The cgroup v2 mount option (Linux 6.0 and later) that makes moving a process into a
group cheap. Without it each move (a worker's ``cgroup.procs`` write) waits for an RCU
grace period of the kernel, and moves made at the same time wait in turn: 10-35 ms a
move measured on an idle 2-core machine, 45-110 ms per worker when 16 started together,
0.1-0.2 ms with the option."""


@dataclass(frozen=True)
class Hierarchy:
    """One cgroup hierarchy as this process sees it."""

    version: int  # 1 or 2
    controllers: frozenset[str]  # v1: from the mount options; v2: empty (read cgroup.controllers)
    folder: str  # this process's own cgroup folder in it
    fast_moves: bool = False  # v2 mounted with favordynmods: a move into a group is cheap

    def has(self, controller: str) -> bool:
        return controller in self.controllers


@dataclass(frozen=True)
class Plan:
    """Candidate hierarchies for killing and for a memory limit, best first."""

    kill: tuple[Hierarchy, ...]
    memory: tuple[Hierarchy, ...]
    pids: tuple[Hierarchy, ...] = ()


def own_paths(proc_cgroup: str) -> dict[str, str]:
    """Controller (v1; ``""`` for v2, ``name=x`` for named ones) -> this process's path."""
    paths: dict[str, str] = {}
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if not controllers:
            paths[""] = path
        for controller in controllers.split(","):
            if controller:
                paths[controller] = path
    return paths


def _mounts(mountinfo: str) -> list[tuple[str, str, str, frozenset[str]]]:
    """(fstype, mount root, mount point, super options) of every cgroup mount."""
    found = []
    for line in mountinfo.splitlines():
        head, sep, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if not sep or len(fields) < 5 or len(rest) < 3 or rest[0] not in ("cgroup", "cgroup2"):
            continue
        options = frozenset(rest[2].split(","))
        found.append((rest[0], _unescape(fields[3]), _unescape(fields[4]), options))
    return found


def _unescape(text: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        text = text.replace(code, char)
    return text


def _inside(mount_root: str, mount_point: str, path: str) -> str | None:
    """The folder of cgroup ``path`` under a mount of ``mount_root``, or None if outside it."""
    if mount_root == "/":
        rel = path.lstrip("/")
    elif path == mount_root or path.startswith(mount_root.rstrip("/") + "/"):
        rel = path[len(mount_root) :].lstrip("/")
    else:
        return None
    return posixpath.join(mount_point, rel) if rel else mount_point


def hierarchies(proc_cgroup: str, mountinfo: str) -> list[Hierarchy]:
    """Every cgroup hierarchy mounted here in which this process's own cgroup is visible."""
    own = own_paths(proc_cgroup)
    result: list[Hierarchy] = []
    seen: set[str] = set()
    for fstype, root, point, options in _mounts(mountinfo):
        if fstype == "cgroup2":
            controllers: frozenset[str] = frozenset()
            path = own.get("")
        else:
            controllers = frozenset(o for o in options if o in own and not o.startswith("name="))
            path = own[next(iter(controllers))] if controllers else None
        folder = _inside(root, point, path) if path is not None else None
        if folder is not None and folder not in seen:
            seen.add(folder)
            version = 1 if fstype == "cgroup" else 2
            fast = version == 2 and FAVOR_DYNMODS in options
            result.append(Hierarchy(version, controllers, folder, fast_moves=fast))
    return result


def choose(found: list[Hierarchy], v2_controllers: frozenset[str]) -> Plan:
    """Order the hierarchies for each role (see the module header).

    Args:
        found: from :func:`hierarchies`.
        v2_controllers: the controllers listed in the v2 folder's ``cgroup.controllers``
            (those the agent's cgroup may hand to its children).
    """
    v2 = [h for h in found if h.version == 2]
    v1 = [h for h in found if h.version == 1]
    kill = list(v2)
    for controller in V1_KILL_ORDER:
        kill += [h for h in v1 if h.has(controller) and h not in kill]
    memory = [h for h in v2 if "memory" in v2_controllers]
    memory += [h for h in v1 if h.has("memory")]
    pids = [h for h in v2 if "pids" in v2_controllers]
    pids += [h for h in v1 if h.has("pids")]
    return Plan(tuple(kill), tuple(memory), tuple(pids))


def move_note(kill: Hierarchy | None) -> str | None:
    """A line for the job's log when moving each worker into its group is slow here
    (``kill``: the hierarchy workers are grouped in); None when it is not."""
    if kill is None or kill.version != 2 or kill.fast_moves:
        return None
    return (
        f"cgroup v2 is mounted without {FAVOR_DYNMODS}: each worker's move into its group "
        "waits for the kernel (10-35 ms, and workers starting together wait in turn); "
        f"mount it with -o {FAVOR_DYNMODS} on Linux 6.0 and later (docs/deploy.md)"
    )
