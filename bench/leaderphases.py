"""``python -m bench.leaderphases [--agents N] [--seconds S] [--cprofile FILE]``: the leader's CPU by phase, W9.

One W9 prsd run (``bench.fleet``: N agents of 2 slots, ``run()`` sleeping 20 ms per
mini-batch) with the leader's main steps timed: each function of :data:`TARGETS` is
wrapped in the leader process (``bench.prsd_launch`` installs the wrappers when
``BENCH_LEADER_PHASES`` names a file) and adds the CPU time of its calling thread
(``time.thread_time``: the step runs in a worker thread) and its call count; the leader
writes the totals to that file at most every 0.25 s (so the last quarter second of a
run may be missing). Nested functions
are counted in their callers too. Printed: calls, CPU ms, µs per mini-batch and per
call, beside the leader's whole CPU (``/proc``) and its CPU while idle (no job, before
the submit). ``--cprofile FILE`` also runs every ``Leader.step`` under ``cProfile`` timed
by ``time.thread_time`` and prints its ``--top`` functions by own CPU time (the profiler
about doubles the leader's CPU: read it for shares, not totals).

Errors: a target that is not found in the tree measured is left out (an older tree).
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import importlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from prsd.spool.atomic import write_atomic

TARGETS = (
    "prsd.leader.leader:Leader.step",
    "prsd.leader.run.job:JobDriver.step",
    "prsd.leader.run.job:JobDriver._scan_done",
    "prsd.leader.run.job:JobDriver._ingest",
    "prsd.leader.run.results:Results.ingest",
    "prsd.leader.run.results:read_result",
    "prsd.leader.run.joblogs:JobLogs.attempts",
    "prsd.leader.run.merge:OrderedMerge.offer",
    "prsd.leader.run.book:JobBook.record",
    "prsd.leader.run.book:JobBook.record_succeeded",
    "prsd.leader.run.job:JobDriver._write_tasks",
    "prsd.leader.run.job:JobDriver._split",
    "prsd.leader.run.tasks:TaskTable.write",
    "prsd.leader.run.tasks:TaskTable.publish_hint",
    "prsd.leader.run.status:StatusWriter.write",
    "prsd.leader.run.job:JobDriver._check_nodes",
    "prsd.leader.run.job:JobDriver._check_verdict",
)
ENV = "BENCH_LEADER_PHASES"
PROFILE_ENV = "BENCH_LEADER_CPROFILE"
"""With ``--cprofile FILE``: every ``Leader.step`` also runs under one ``cProfile``
profiler timed by ``time.thread_time`` (CPU, not wall), its stats dumped to FILE."""


def install(out: str) -> None:
    """Wrap every target found; totals go to ``out`` (JSON: name -> [calls, cpu s])."""
    totals: dict[str, list[float]] = {}
    last = [0.0]

    profiler = cProfile.Profile(time.thread_time) if os.environ.get(PROFILE_ENV) else None

    def dump() -> None:
        write_atomic(Path(out), json.dumps(totals).encode(), durable=False)
        if profiler is not None:
            profiler.dump_stats(os.environ[PROFILE_ENV])

    def wrap(name: str, fn: Any) -> Any:
        profiled = profiler is not None and name == "Leader.step"

        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.thread_time()
            if profiled:
                assert profiler is not None
                profiler.enable()
            try:
                return fn(*args, **kwargs)
            finally:
                if profiled:
                    assert profiler is not None
                    profiler.disable()
                entry = totals.setdefault(name, [0, 0.0])
                entry[0] += 1
                entry[1] += time.thread_time() - start
                now = time.monotonic()
                if now - last[0] > 0.25:
                    last[0] = now
                    dump()

        return timed

    for target in TARGETS:
        module_name, _, path = target.partition(":")
        owner: Any = importlib.import_module(module_name)
        *outer, attr = path.split(".")
        for part in outer:
            owner = getattr(owner, part, None)
        if owner is None or not hasattr(owner, attr):
            continue
        setattr(owner, attr, wrap(path, getattr(owner, attr)))


def main(argv: list[str] | None = None) -> int:
    import psutil

    from bench import fleet
    from bench.cpu import own_cpu_s

    p = argparse.ArgumentParser(prog="python -m bench.leaderphases", description=__doc__)
    p.add_argument("--agents", type=int, default=1)
    p.add_argument("--seconds", type=float, default=10.0, help="ideal seconds of work")
    p.add_argument("--work", type=Path, default=Path("/tmp/bench-leaderphases"))
    p.add_argument("--cprofile", type=Path, help="also write the steps' cProfile stats here")
    p.add_argument("--top", type=int, default=30, help="cProfile rows printed (by own time)")
    args = p.parse_args(argv)
    if args.cprofile:
        args.cprofile.unlink(missing_ok=True)
        os.environ[PROFILE_ENV] = str(args.cprofile)
    out = args.work.with_suffix(".json")
    out.unlink(missing_ok=True)
    os.environ[ENV] = str(out)  # bench_env copies os.environ: the daemons inherit it
    idle: list[float] = []
    start_daemons = fleet.start_daemons

    def measured_start(*a: Any, **k: Any) -> Any:
        daemons = start_daemons(*a, **k)
        before = own_cpu_s(daemons.leader.pid)
        time.sleep(2.0)
        idle.append((own_cpu_s(daemons.leader.pid) - before) / 2.0)
        return daemons

    fleet.start_daemons = measured_start  # type: ignore[assignment]
    count = fleet.plan_count(args.agents, args.seconds, fleet.NAP_S)
    row = fleet._prsd(args.agents, count, fleet.NAP_S, args.work, False)
    print(f"W9 N={args.agents}, {count} mini-batches: {row}")
    if idle:
        print(f"leader idle: {1e3 * idle[0]:.1f} ms CPU per second (psutil {psutil.__version__})")
    totals = json.loads(out.read_text()) if out.exists() else {}
    for name, (calls, cpu) in sorted(totals.items(), key=lambda kv: -kv[1][1]):
        print(
            f"{name:34s} calls {int(calls):7d}  cpu {1e3 * cpu:8.1f} ms  "
            f"{1e6 * cpu / count:7.1f} µs/mb  {1e6 * cpu / max(calls, 1):8.1f} µs/call"
        )
    if args.cprofile and args.cprofile.exists():
        import pstats

        stats = pstats.Stats(str(args.cprofile))
        stats.sort_stats("tottime").print_stats(args.top)
    return 0 if row.get("status") == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
