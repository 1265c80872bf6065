"""``python -m bench.w9timeline --agents N --seconds S``: where a W9 run's wall time goes.

W9's efficiency is one ratio; this tool splits what a run loses against the ideal, from
the workers' side. A leader and N agents of 2 slots (``bench.execute.start_daemons``),
W9's job (``run()`` sleeps 20 ms per mini-batch, one file each) with the entry script
``naptimes.py``, which records the wall time of every ``run()`` call and its first
item. From those records and the spool's files, per run:

- the start, each from the submit: ``spec_s``, the leader's ``spec.json`` (the job taken
  in); ``imported_s`` and ``init_s``, each worker's import of the entry script (its
  process up, forked, in its cgroup) and its ``init()``; ``first_run_s``, its first
  ``run()`` (min, median, max; ``init()`` to ``run()`` is the ``ready`` frame, a claim
  and the ``run`` frame);
- ``within_gap_ms`` / ``between_gap_ms``: the gaps between two calls of one worker on
  consecutive items (one task) and across tasks (median, p90), and their sums per
  worker (``*_sum_s``);
- ``nap_ms``: the mean length of a 20 ms nap (oversleeping);
- ``last_end_s`` and ``final_s``: the last ``run()``'s end and ``final.json``, from
  the submit; ``last_ends_s``, each worker's last ``run()`` end (min, median, max:
  how long workers idle at the job's end); ``wall_s`` and ``efficiency`` as W9 counts them.

The submit's modules are imported before the timer (``bench.execute.warm_client``), as
in W9. Prints one line per run; ``--out`` keeps every run (JSON). Errors: a run whose
job does not complete is printed with its status and kept with it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

from bench.execute import REPO, final_state, start_daemons, submit_job, wait_final, warm_client
from bench.fleet import NAP_S, SLOTS_PER_AGENT, ideal_rate, plan_count
from bench.inputs import file_set
from bench.measure import bench_env
from bench.prsd_job import job_yaml, make_job_folder

Call = tuple[float, float, str]  # start, end (wall), first item's name


class Record(NamedTuple):
    """One worker's ``times-<pid>.txt`` (wall times)."""

    imported: float  # the entry script imported
    init: float  # its init() called
    calls: list[Call]  # every run() call, in order


def read_times(path: Path) -> Record:
    """A ``times-<pid>.txt`` of naptimes.py."""
    lines = path.read_text(encoding="utf-8").splitlines()
    _, imported, init = lines[0].split()
    calls = []
    for line in lines[1:]:
        start, end, *name = line.split()
        calls.append((float(start), float(end), name[0] if name else ""))
    return Record(float(imported), float(init), calls)


def _index(name: str) -> int | None:
    digits = re.sub(r"\D", "", name)
    return int(digits) if digits else None


def _q(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _spread(values: list[float]) -> list[float]:
    return [round(min(values), 3), round(statistics.median(values), 3), round(max(values), 3)]


def timeline(
    records: list[Record], submit: float, final: float | None, spec: float | None = None
) -> dict[str, Any]:
    """The figures of one run (see the module) from each worker's record, in wall time."""
    records = [r for r in records if r.calls]
    workers = [r.calls for r in records]
    firsts = [w[0][0] - submit for w in workers]
    within: list[float] = []
    between: list[float] = []
    naps: list[float] = []
    for calls in workers:
        naps += [end - start for start, end, _ in calls]
        for (_, end, name), (start, _, nxt) in itertools.pairwise(calls):
            a, b = _index(name), _index(nxt)
            same_task = a is not None and b is not None and b == a + 1
            (within if same_task else between).append(start - end)
    ms = 1000.0
    row: dict[str, Any] = {
        "workers": len(workers),
        "calls": sum(len(w) for w in workers),
        "imported_s": _spread([r.imported - submit for r in records]),
        "init_s": _spread([r.init - submit for r in records]),
        "first_run_s": _spread(firsts),
        "nap_ms": round(statistics.fmean(naps) * ms, 2),
        "last_end_s": round(max(w[-1][1] for w in workers) - submit, 3),
        "last_ends_s": _spread([w[-1][1] - submit for w in workers]),
    }
    for key, gaps in (("within", within), ("between", between)):
        if gaps:
            row[f"{key}_gap_ms"] = [round(_q(gaps, 0.5) * ms, 2), round(_q(gaps, 0.9) * ms, 2)]
            row[f"{key}_sum_s"] = round(sum(gaps) / len(workers), 4)
    if final is not None:
        row["final_s"] = round(final - submit, 3)
    if spec is not None:
        row["spec_s"] = round(spec - submit, 3)
    return row


def _mtime(path: Path) -> float | None:
    try:
        return os.stat(path).st_mtime
    except FileNotFoundError:
        return None


_CHILD_ENV = {"BENCH_NAP_S": str(NAP_S)}


def one_run(agents: int, seconds: float, work: Path) -> dict[str, Any]:
    """One W9 run with naptimes.py: its timeline (see :func:`timeline`)."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    marks = work / "marks"
    marks.mkdir()
    count = plan_count(agents, seconds, NAP_S)
    env = {**_CHILD_ENV, "BENCH_MARK_DIR": str(marks)}
    job = make_job_folder(
        work / "job",
        job_yaml(
            name="w9-timeline",
            input_path=str(file_set(count, 0)),
            input_format="files",
            mini_batch_size="1",
            workers=SLOTS_PER_AGENT,
            script="naptimes.py",
            env=env,
        ),
    )
    spool = work / "spool"
    daemons = start_daemons(spool, work, bench_env({"PYTHONPATH": str(REPO)}), agents)
    try:
        time.sleep(2.0)  # the daemons up and idle, as W9 has them
        warm_client()
        submit, start = time.time(), time.perf_counter()
        job_id = submit_job(job, spool)
        done = wait_final(spool, job_id, 120 + 20 * seconds)
        wall = time.perf_counter() - start
    finally:
        daemons.stop()  # the workers' shutdown() writes their records
    state = final_state(spool, job_id) if done else "timeout"
    row: dict[str, Any] = {"agents": agents, "mini_batches": count, "state": state}
    if state == "Completed":
        job_dir = spool / "jobs" / job_id
        final, spec = _mtime(job_dir / "state" / "final.json"), _mtime(job_dir / "spec.json")
        records = [read_times(p) for p in sorted(marks.glob("times-*.txt"))]
        row.update(timeline(records, submit, final, spec))
        row["wall_s"] = round(wall, 3)
        row["efficiency"] = round(count / wall / ideal_rate(agents, NAP_S), 3)
    shutil.rmtree(work, ignore_errors=True)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.w9timeline", description=__doc__)
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=8.0, help="ideal seconds of work")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", type=Path, help="every run, as JSON")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="w9timeline-") as scratch:
        for repeat in range(args.repeats):
            row = one_run(args.agents, args.seconds, Path(scratch) / f"run{repeat}")
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.out is not None:
        args.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0 if all(r["state"] == "Completed" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
