"""Choosing where workers' cgroups live, from /proc/self/cgroup and mountinfo texts."""

from __future__ import annotations

from prsd.agent.cgroupplan import Hierarchy, choose, hierarchies, move_note, own_paths

HYBRID_CGROUP = """\
6:freezer:/
5:pids:/
4:memory:/process_api/abc
1:name=systemd:/
0::/
"""
HYBRID_MOUNTS = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
V2_CGROUP = "0::/system.slice/prsd-agent.service\n"
V2_MOUNTS = "29 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
CONTAINER_CGROUP = "0::/\n"
CONTAINER_MOUNTS = "700 690 0:30 /docker/abc /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw\n"


def test_own_paths_reads_v1_controllers_and_the_v2_line() -> None:
    """Each v1 controller and the v2 entry ("") map to this process's path."""
    paths = own_paths("7:cpu,cpuacct:/a\n0::/b\n")
    assert paths == {"cpu": "/a", "cpuacct": "/a", "": "/b"}


def test_hybrid_machine_kills_by_v2_and_limits_memory_by_v1() -> None:
    """Hybrid: v2 has no controllers, so v2 kills and the v1 memory hierarchy limits."""
    found = hierarchies(HYBRID_CGROUP, HYBRID_MOUNTS)
    plan = choose(found, frozenset())
    assert [h.folder for h in plan.kill] == [
        "/sys/fs/cgroup/unified",
        "/sys/fs/cgroup/freezer",
        "/sys/fs/cgroup/pids",
        "/sys/fs/cgroup/memory/process_api/abc",
    ]
    assert [h.folder for h in plan.memory] == ["/sys/fs/cgroup/memory/process_api/abc"]


def test_systemd_v2_with_memory_controller_uses_v2_for_both() -> None:
    """Unified systemd host with Delegate=yes: the service's own folder serves both roles."""
    found = hierarchies(V2_CGROUP, V2_MOUNTS)
    folder = "/sys/fs/cgroup/system.slice/prsd-agent.service"
    assert found == [Hierarchy(2, frozenset(), folder)]
    plan = choose(found, frozenset({"memory", "pids"}))
    assert [h.folder for h in plan.kill] == [folder]
    assert [h.folder for h in plan.memory] == [folder]
    assert choose(found, frozenset({"pids"})).memory == ()


def test_a_cgroup_outside_the_mounted_root_is_not_used() -> None:
    """A container mount of /docker/abc shows nothing of cgroup "/" outside it."""
    assert hierarchies(CONTAINER_CGROUP, CONTAINER_MOUNTS) == []
    inside = hierarchies("0::/docker/abc/w\n", CONTAINER_MOUNTS)
    assert inside == [Hierarchy(2, frozenset(), "/sys/fs/cgroup/w")]


def test_no_cgroup_mounts_means_no_plan() -> None:
    """Without cgroup mounts the plan is empty (the caller falls back to the sweep)."""
    plan = choose(hierarchies(HYBRID_CGROUP, "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"), frozenset())
    assert plan.kill == () and plan.memory == ()


def test_a_v2_mount_without_favordynmods_is_named_in_the_jobs_log() -> None:
    """Moving a worker into a v2 group waits for the kernel unless the hierarchy is
    mounted with favordynmods: the log says so, and says nothing when it is."""
    slow = hierarchies(V2_CGROUP, V2_MOUNTS)[0]
    fast = hierarchies(V2_CGROUP, V2_MOUNTS.replace("rw,nsdelegate", "rw,nsdelegate,favordynmods"))
    assert not slow.fast_moves and fast[0].fast_moves
    note = move_note(slow)
    assert note is not None and "favordynmods" in note and "docs/deploy.md" in note
    assert move_note(fast[0]) is None
    # v1 groups (a hybrid machine's memory hierarchy) and no group: nothing to say
    v1 = [h for h in hierarchies(HYBRID_CGROUP, HYBRID_MOUNTS) if h.version == 1]
    assert v1 and move_note(v1[0]) is None and move_note(None) is None
    # the option is read from the mount's super options, not its mount options
    in_mount_options = V2_MOUNTS.replace("rw,nosuid shared:4", "rw,nosuid,favordynmods shared:4")
    assert not hierarchies(V2_CGROUP, in_mount_options)[0].fast_moves
