"""CPU seconds of processes and their trees, read from ``/proc`` (psutil).

A process tree's CPU between two readings: every live process's own user + system time,
plus its ``children_*`` times (what it has reaped: workers that exited in between count
through their parent). Processes that are gone at a reading and were not reaped by a
process of the tree are missed; W9 reads while every daemon and worker pool is alive.
"""

from __future__ import annotations

import os

import psutil


def own_cpu_s(pid: int) -> float:
    """User + system seconds of one process, its children excluded (0.0 once it is gone)."""
    try:
        t = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return 0.0
    return t.user + t.system


def tree_cpu_s(roots: list[int], *, own_only: bool = False) -> float:
    """User + system seconds of ``roots`` (default: this process) and every descendant,
    reaped children included; ``own_only``: the roots alone."""
    procs: dict[int, psutil.Process] = {}
    for pid in roots or [os.getpid()]:
        try:
            root = psutil.Process(pid)
        except psutil.Error:
            continue
        procs[root.pid] = root
        if not own_only:
            for child in root.children(recursive=True):
                procs[child.pid] = child
    total = 0.0
    for p in procs.values():
        try:
            t = p.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system
        if not own_only:
            total += t.children_user + t.children_system
    return total
