"""``python -m bench.prsd_launch RSS_FILE ARGS...``: ``prsd ARGS...``, then its peak RSS.

The harness finds prsd's own processes (leader, agent) by this module's name in their
command line, and reads the exact peak RSS of ``prsd run`` from ``RSS_FILE``: the
kernel's high-water mark ``VmHWM`` of this process alone (workers excluded). Not
``getrusage``'s ``ru_maxrss``: Linux carries that across ``fork`` and ``execve``, so it
would report the harness's own peak.
"""

from __future__ import annotations

import os
import sys

from prsd.daemon import leave, main


def launch(argv: list[str]) -> int:
    rss_file, args = argv[0], argv[1:]
    phases = os.environ.get("BENCH_LEADER_PHASES")
    if phases and args[:1] == ["leader"]:
        from bench.leaderphases import install  # only then: no import for other runs

        install(phases)  # python -m bench.leaderphases: the leader's steps timed
    try:
        return main(args)
    finally:
        with open(rss_file, "w", encoding="ascii") as f:
            f.write(str(vm_hwm_kb()))


def vm_hwm_kb() -> int:
    """This process's peak RSS since its ``execve``, in KiB (0 if unknown)."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


if __name__ == "__main__":
    leave(launch(sys.argv[1:]))  # as the ``prsd`` command leaves
