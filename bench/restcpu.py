"""``python -m bench.restcpu [--before TREE] --agents N --nap S``: the daemons' CPU per
second while a job's workers sleep.

A leader and N agents of 2 worker slots on one spool (``bench.execute.start_daemons``),
a job whose ``run()`` sleeps ``--nap`` seconds per mini-batch (one mini-batch per task
at naps of 0.5 s and more: 2 / nap tasks a second per agent), and, from 3 s after
the submit, ``--seconds`` of the leader's and each agent's own CPU (``/proc``, workers
excluded), in ms per second; also each agent's CPU before the submit (idle). What
this shows is the daemons' cost per second of a running job (timers, samples, status
files, heartbeats) that W9's figures per mini-batch mix with the per-task work.

With ``--before TREE`` every sample is a fresh interpreter in its tree (working folder
and ``PYTHONPATH``), trees alternating as in :mod:`bench.sidebyside`; this tree is
"after". Prints one line per sample and the medians per tree; ``--out`` keeps every
sample (JSON). Errors: a sample that fails is printed with its output's tail and left
out of the medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench.execute import REPO
from bench.sidebyside import _child_env, child_row, order

_CHILD = r"""
import json, shutil, sys, time
from pathlib import Path
from bench.cpu import own_cpu_s
from bench.execute import REPO, start_daemons, submit_job, wait_final
from bench.inputs import file_set
from bench.measure import bench_env
from bench.prsd_job import job_yaml, make_job_folder

n, nap, seconds, run_dir = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), Path(sys.argv[4])
shutil.rmtree(run_dir, ignore_errors=True)
run_dir.mkdir(parents=True)
count = int(n * 2 * (seconds + 3) / nap) + 2 * n
job = make_job_folder(run_dir / "job", job_yaml(
    name="restcpu", input_path=str(file_set(count, 0)), input_format="files",
    mini_batch_size="1", workers=2, script="nap.py", env={"BENCH_NAP_S": str(nap)}))
(run_dir / "marks").mkdir()
env = bench_env({"BENCH_MARK_DIR": str(run_dir / "marks"), "PYTHONPATH": str(REPO)})
spool = run_dir / "spool"
daemons = start_daemons(spool, run_dir, env, n)
agents = [p.pid for p in daemons.agents]
try:
    time.sleep(3)
    before, t0 = [own_cpu_s(p) for p in agents], time.monotonic()
    time.sleep(3)
    idle = [(own_cpu_s(p) - b) / (time.monotonic() - t0) * 1e3 for p, b in zip(agents, before)]
    job_id = submit_job(job, spool)
    time.sleep(3)
    before, lead0, t0 = [own_cpu_s(p) for p in agents], own_cpu_s(daemons.leader.pid), time.monotonic()
    time.sleep(seconds)
    dt = time.monotonic() - t0
    busy = [(own_cpu_s(p) - b) / dt * 1e3 for p, b in zip(agents, before)]
    leader = (own_cpu_s(daemons.leader.pid) - lead0) / dt * 1e3
    done = wait_final(spool, job_id, 3 * (seconds + 3) + 60)
finally:
    daemons.stop()
shutil.rmtree(run_dir, ignore_errors=True)
row = {"status": "ok" if done else "timeout", "leader_ms_per_s": round(leader, 2),
       "agent_ms_per_s": [round(x, 2) for x in busy], "idle_agent_ms_per_s": [round(x, 2) for x in idle]}
print("ROW " + json.dumps(row))
"""


def sample(tree: Path, agents: int, nap_s: float, seconds: float, work: Path) -> dict[str, Any]:
    """One run from ``tree``: the leader's and each agent's CPU per second, job running."""
    args = [str(agents), str(nap_s), str(seconds), str(work)]
    return child_row(tree, _CHILD, args, _child_env(tree), 600 + 6 * seconds)


def summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Medians over the samples that completed: the leader's, and the agents' (all)."""
    ok = [r for r in rows if r.get("status") == "ok"]
    if not ok:
        return {}
    return {
        "leader_ms_per_s": statistics.median(r["leader_ms_per_s"] for r in ok),
        "agent_ms_per_s": statistics.median(x for r in ok for x in r["agent_ms_per_s"]),
        "idle_agent_ms_per_s": statistics.median(x for r in ok for x in r["idle_agent_ms_per_s"]),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.restcpu", description=__doc__)
    p.add_argument("--before", type=Path, help="a tree to compare with (alternating)")
    p.add_argument("--agents", type=int, default=4)
    p.add_argument("--nap", type=float, default=1.0, help="seconds run() sleeps per mini-batch")
    p.add_argument("--seconds", type=float, default=15.0, help="seconds measured, job running")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", type=Path)
    a = p.parse_args(argv)
    trees = [("after", REPO)] if a.before is None else [("before", a.before), ("after", REPO)]
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in trees}
    with tempfile.TemporaryDirectory(prefix="restcpu-") as work:
        for repeat in range(a.repeats):
            for name, tree in order(trees, repeat):
                row = sample(tree, a.agents, a.nap, a.seconds, Path(work) / f"{name}-{repeat}")
                rows[name].append(row)
                print(f"#{repeat} {name}: {row}", flush=True)
    for name, _ in trees:
        print(f"{name}: medians {summary(rows[name])}")
    if a.out is not None:
        doc = {"agents": a.agents, "nap_s": a.nap, "seconds": a.seconds, "samples": rows}
        a.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
