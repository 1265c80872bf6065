"""W8 (many agents, CPU-bound) and W9 (fleet scaling).

W9: N agents of 2 worker slots each on one spool, ``run()`` sleeping
20 ms per mini-batch (no CPU), so the figure is prsd's coordination, not the cores.

For each N: mini-batches enough for ``seconds`` at the ideal rate (2N / 0.020 s),
throughput from submit to ``final.json``, efficiency = measured / ideal, and the CPU
seconds per mini-batch of the leader and of all agents together (their own time, from
``/proc``), and of the whole tree with the workers; the idle agents' polling cost
(CPU per agent per second, read before the submit); double claims. Dask and Ray run the
same sleep on 2N single-thread workers / actors side by side (bench/runners/napfleet.py).
With ``rig``, every agent reaches the spool through its own sshfs mount (the FUSE rig of
tests/fsrig) and the leader through the exported folder itself.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import psutil

from bench.cpu import own_cpu_s, tree_cpu_s
from bench.execute import (
    REPO,
    digest,
    final_state,
    niceness,
    start_daemons,
    submit_job,
    wait_final,
    warm_client,
)
from bench.inputs import file_set
from bench.measure import bench_env, tail
from bench.prsd_job import job_output, job_yaml, make_job_folder
from bench.special import daemon_env, double_claims, echo_digest, echo_job
from bench.stats import median

SLOTS_PER_AGENT = 2
NAP_S = 0.020
IDLE_S = 3.0
RIG_EXPORT = Path(os.environ.get("PRSD_RIG", "/tmp/fsrig")) / "export"
RIG_MNT = Path(os.environ.get("PRSD_RIG_MNT", "/mnt/fsrig"))


def plan_count(agents: int, seconds: float, nap_s: float) -> int:
    """Mini-batches for ``seconds`` of work at the ideal rate of ``agents`` agents."""
    return max(agents * SLOTS_PER_AGENT, math.ceil(seconds * agents * SLOTS_PER_AGENT / nap_s))


def ideal_rate(agents: int, nap_s: float) -> float:
    return agents * SLOTS_PER_AGENT / nap_s


def w9_fleet(
    agent_counts: tuple[int, ...],
    seconds: float,
    nap_s: float,
    systems: tuple[str, ...],
    repeats: int,
    work: Path,
    rig_agents: int | None = None,
) -> dict[str, Any]:
    """Every (N, system) ``repeats`` times; the rig variant (prsd only) at ``rig_agents``."""
    rows: list[dict[str, Any]] = []
    variants = [(n, s, False) for n in agent_counts for s in systems]
    if rig_agents:
        variants.append((rig_agents, "prsd", True))
    for repeat in range(repeats):
        for n, system, rig in variants:
            count = plan_count(n, seconds, nap_s)
            if system == "prsd":
                row = _prsd(n, count, nap_s, work / f"W9-{n}-{repeat}", rig)
            else:
                row = _other(system, n, count, nap_s, work / f"W9-{system}-{n}-{repeat}")
            row.update(system=system + ("-sshfs" if rig else ""), agents=n, repeat=repeat)
            row.update(mini_batches=count, ideal_per_s=round(ideal_rate(n, nap_s), 1))
            if row.get("wall_s"):
                rate = count / row["wall_s"]
                row["mbs_per_s"] = round(rate, 1)
                row["efficiency"] = round(rate / ideal_rate(n, nap_s), 3)
            rows.append(row)
            print(f"  W9 {row['system']} N={n} #{repeat}: {_short(row)}", flush=True)
    return {"nap_s": nap_s, "seconds": seconds, "samples": rows, "summary": summarize(rows)}


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Medians per (system, N) over the runs that completed."""
    keys = sorted({(r["system"], r["agents"]) for r in rows}, key=lambda k: (k[1], k[0]))
    out = []
    for system, n in keys:
        mine = [r for r in rows if (r["system"], r["agents"]) == (system, n)]
        ok = [r for r in mine if r["status"] == "ok"]
        entry: dict[str, Any] = {"system": system, "agents": n, "runs": len(ok), "of": len(mine)}
        for key in (
            "mbs_per_s",
            "efficiency",
            "leader_us_per_mb",
            "agents_us_per_mb",
            "driver_us_per_mb",
            "tree_us_per_mb",
            "idle_agent_cpu_ms_per_s",
        ):
            values = [r[key] for r in ok if r.get(key) is not None]
            if values:
                entry[key] = median(values)
        if system.startswith("prsd"):
            entry["double_claims"] = sum(r.get("double_claims") or 0 for r in mine)
        out.append(entry)
    return out


def _short(row: dict[str, Any]) -> str:
    keep = ("status", "wall_s", "mbs_per_s", "efficiency", "leader_us_per_mb", "agents_us_per_mb")
    return ", ".join(f"{k} {row[k]}" for k in keep if k in row) + (
        f"; {row['note'][:200]}" if row.get("note") else ""
    )


def _prsd(n: int, count: int, nap_s: float, run_dir: Path, rig: bool) -> dict[str, Any]:
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    root = file_set(count, 0)
    want = echo_digest(root)
    spool, agent_spools, shared = run_dir / "spool", None, None
    if rig:
        shared = RIG_EXPORT / f"w9-{uuid.uuid4().hex[:10]}"
        spool = shared / "spool"
        agent_spools = [RIG_MNT / f"sshfs{i}" / shared.name / "spool" for i in range(n)]
    job = make_job_folder(
        run_dir / "job",
        job_yaml(
            name="bench-w9",
            input_path=str(root),
            input_format="files",
            mini_batch_size="1",
            workers=SLOTS_PER_AGENT,
            script="nap.py",
            env={"BENCH_NAP_S": str(nap_s)},
        ),
    )
    (run_dir / "marks").mkdir()
    env = bench_env({"BENCH_MARK_DIR": str(run_dir / "marks"), "PYTHONPATH": str(REPO)})
    row: dict[str, Any] = {"status": "failed"}
    daemons = start_daemons(spool, run_dir, env, n, agent_spools=agent_spools)
    agent_pids = [p.pid for p in daemons.agents]
    row["leader_nice"] = niceness(daemons.leader.pid)  # as its unit sets it, when root
    try:
        idle0 = sum(own_cpu_s(pid) for pid in agent_pids)
        time.sleep(IDLE_S)
        idle = sum(own_cpu_s(pid) for pid in agent_pids) - idle0
        row["idle_agent_cpu_ms_per_s"] = round(1000 * idle / n / IDLE_S, 2)
        pids = [daemons.leader.pid, *agent_pids]
        leader0, agents0 = own_cpu_s(pids[0]), sum(own_cpu_s(p) for p in agent_pids)
        tree0 = tree_cpu_s(pids)
        warm_client()
        start = time.perf_counter()
        job_id = submit_job(job, spool)
        done = wait_final(spool, job_id, 60 + 20 * count * nap_s / (n * SLOTS_PER_AGENT))
        wall = time.perf_counter() - start
        leader = own_cpu_s(pids[0]) - leader0
        agents = sum(own_cpu_s(p) for p in agent_pids) - agents0
        tree = tree_cpu_s(pids) - tree0
    finally:
        daemons.stop()
    state = final_state(spool, job_id) if done else "timeout"
    out = job_output(spool)
    if state == "Completed" and out is not None and digest(out) == want:
        row.update(status="ok", wall_s=round(wall, 3))
        row["leader_us_per_mb"] = round(1e6 * leader / count, 1)
        row["agents_us_per_mb"] = round(1e6 * agents / count, 1)
        row["tree_us_per_mb"] = round(1e6 * tree / count, 1)
    else:
        row["note"] = f"job {state}; {tail(run_dir / 'logs' / 'leader.txt')[-300:]}"
    row["double_claims"] = double_claims(spool, job_id) if done else None
    shutil.rmtree(run_dir, ignore_errors=True)
    if shared is not None:
        shutil.rmtree(shared, ignore_errors=True)
    return row


def _other(system: str, n: int, count: int, nap_s: float, run_dir: Path) -> dict[str, Any]:
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    out = run_dir / "result.json"
    slots = n * SLOTS_PER_AGENT
    args = [sys.executable, "-m", "bench.runners.napfleet", system, str(slots), str(count)]
    r = subprocess.run(
        [*args, str(nap_s), str(out)],
        cwd=REPO,
        env=bench_env({"PYTHONPATH": str(REPO)}),
        capture_output=True,
        text=True,
        timeout=600 + 20 * count * nap_s / slots,
        check=False,
    )
    row: dict[str, Any] = {"status": "failed"}
    if r.returncode != 0 or not out.exists():
        row["note"] = f"exit {r.returncode}: {(r.stdout + r.stderr)[-300:]}"
    else:
        doc = json.loads(out.read_text(encoding="utf-8"))
        if doc["results"] == count and doc["distinct"] == count:
            row.update(status="ok", wall_s=round(doc["wall_s"], 3))
            row["driver_us_per_mb"] = round(1e6 * doc["driver_cpu_s"] / count, 1)
            row["tree_us_per_mb"] = round(1e6 * doc["tree_cpu_s"] / count, 1)
        else:
            row.update(status="mismatch", note=f"{doc['distinct']} distinct of {count}")
    shutil.rmtree(run_dir, ignore_errors=True)
    return row


# --- W8 ---------------------------------------------------------------------------------


def w8_many_agents(
    items: int, agent_counts: tuple[int, ...], repeats: int, work: Path
) -> dict[str, Any]:
    """W1 (mini-batch 10) on one spool served by 1, 2, 4, 8 agents of one worker each."""
    root = file_set(items, 0)
    want = echo_digest(root)
    mbs = -(-items // 10)
    rows: list[dict[str, Any]] = []
    for repeat in range(repeats):
        for n in agent_counts:
            run_dir = work / f"W8-{n}-{repeat}"
            shutil.rmtree(run_dir, ignore_errors=True)
            run_dir.mkdir(parents=True)
            spool = run_dir / "spool"
            job = echo_job(run_dir, root, 10, 1, "bench-w8")
            row: dict[str, Any] = {"agents": n, "repeat": repeat, "status": "failed"}
            daemons = start_daemons(spool, run_dir, daemon_env(run_dir), n)
            try:
                cpu0 = psutil.cpu_times()
                start = time.perf_counter()
                job_id = submit_job(job, spool)
                done = wait_final(spool, job_id, 600)
                row["wall_s"] = round(time.perf_counter() - start, 4)
                row["machine_busy"] = machine_busy(cpu0, psutil.cpu_times())
            finally:
                daemons.stop()
            row["prsd_rss_mb"] = round(daemons.sampler.peaks.prsd_max_mb, 1)
            state = final_state(spool, job_id) if done else "timeout"
            out = job_output(spool)
            if state == "Completed" and out is not None and digest(out) == want:
                row["status"] = "ok"
                row["mbs_per_s"] = round(mbs / row["wall_s"], 1)
            else:
                row["note"] = f"job {state}; {tail(run_dir / 'logs' / 'leader.txt')[-300:]}"
            row["double_claims"] = double_claims(spool, job_id) if done else None
            rows.append(row)
            shutil.rmtree(run_dir, ignore_errors=True)
            print(f"  W8 agents={n} repeat={repeat}: {row}", flush=True)
    summary = []
    for n in agent_counts:
        mine = [r for r in rows if r["agents"] == n and r["status"] == "ok"]
        summary.append(
            {
                "agents": n,
                "runs": len(mine),
                "machine_busy": median([r["machine_busy"] for r in mine]),
                "wall_s": median([r["wall_s"] for r in mine]),
                "mbs_per_s": median([r["mbs_per_s"] for r in mine]),
                "double_claims": sum(r["double_claims"] or 0 for r in rows if r["agents"] == n),
                "prsd_rss_mb": max((r["prsd_rss_mb"] for r in mine), default=None),
            }
        )
    return {"items": items, "mini_batches": mbs, "samples": rows, "summary": summary}


def machine_busy(before: Any, after: Any) -> float:
    """The share of the machine's CPU time (all cores) that was not idle between two
    ``psutil.cpu_times()`` readings: 1.0 means every core was busy throughout."""
    idle = (after.idle + getattr(after, "iowait", 0.0)) - (
        before.idle + getattr(before, "iowait", 0.0)
    )
    total = sum(after) - sum(before)
    return round(1.0 - idle / total, 3) if total > 0 else 0.0
