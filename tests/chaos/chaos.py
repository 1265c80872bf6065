"""Chaos: leaders, agents and workers killed with SIGKILL while a job runs; nothing lost.

A job of ``items`` files runs twice: once undisturbed (``prsd run``), once on a fleet
of ``leaders`` leaders and ``agents`` agents (two workers each) while a driver kills a
random agent, worker or the current leader every ``every_s`` seconds and restarts it.
The two output files must be byte-identical, ``processed_mini-batches.csv`` must
account for every attempt of every mini-batch, and no task may be committed twice.

Run by hand with a bigger size::

    .venv/bin/python -m tests.chaos.chaos --items 100000 --every 1.5
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from prsd.spool.lease import current_epoch, read_holder
from prsd.spool.opening import open_spool
from tests.fleet import Fleet

SCRIPT = """
import hashlib, os, time

def init():
    pass

def run(mini_batch):
    time.sleep(float(os.environ.get("PER_MB_S", "0.01")))
    out = []
    for path in mini_batch:
        data = open(path, "rb").read()
        out.append(os.path.basename(path) + " " + hashlib.sha256(data).hexdigest()[:16])
    return out
"""

YAML = """
type: parallel
name: chaos
input_data: ./data
mini_batch_size: "{size}"
resources: {{max_concurrency_per_instance: 2}}
retry_settings: {{max_retries: 8, timeout: 60}}
output_action: append_row
append_row_file_name: out.txt
environment_variables: {{PER_MB_S: "{per_mb}"}}
task:
  code: ./code
  entry_script: score.py
"""


@dataclass
class ChaosReport:
    items: int
    mini_batches: int
    seconds: float
    kills: Counter[str] = field(default_factory=Counter)
    requeues: int = 0
    attempts: int = 0
    duplicates: int = 0
    identical: bool = False
    accounted: bool = False
    problems: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)

    def line(self) -> str:
        kills = ", ".join(f"{k} {v}" for k, v in sorted(self.kills.items())) or "none"
        return (
            f"chaos: {self.items} items, {self.mini_batches} mini-batches in {self.seconds:.1f} s; "
            f"kills: {kills}; attempts {self.attempts}, requeues {self.requeues}, "
            f"duplicates {self.duplicates}; output identical: {self.identical}; "
            f"every attempt accounted: {self.accounted}"
        )


def make_job(root: Path, items: int, size: int, per_mb_s: float) -> Path:
    job = root / "job"
    (job / "code").mkdir(parents=True)
    (job / "code" / "score.py").write_text(SCRIPT, encoding="utf-8")
    (job / "job.yaml").write_text(YAML.format(size=size, per_mb=per_mb_s), encoding="utf-8")
    data = job / "data"
    data.mkdir()
    for i in range(items):
        (data / f"item{i:06d}.txt").write_text(f"{i}\n", encoding="utf-8")
    return job


def undisturbed_output(root: Path, job: Path) -> bytes:
    spool = root / "calm-spool"
    proc = subprocess.run(
        [sys.executable, "-m", "prsd.daemon", "run", str(job), "--spool", str(spool)],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if proc.returncode != 0:
        raise AssertionError(f"undisturbed run failed: {proc.stdout}\n{proc.stderr}")
    job_id = proc.stdout.split()[1]
    return (spool / "jobs" / job_id / "outputs" / "out.txt").read_bytes()


def _leader_pid(fleet: Fleet) -> int | None:
    spool = open_spool(fleet.spool)
    holder = read_holder(spool, current_epoch(spool))
    return None if holder is None else holder.pid


def _kill_one(fleet: Fleet, rng: random.Random, agents: list[str], leaders: list[str]) -> str:
    kind = rng.choice(["agent", "agent", "worker", "worker", "leader"])
    if kind == "leader":
        pid = _leader_pid(fleet)
        for name in leaders:
            if fleet.alive(name) and fleet.procs[name].pid == pid:
                fleet.kill(name)
                return f"leader:{name}"
        kind = "worker"
    if kind == "worker":
        workers = []
        for name in agents:
            if fleet.alive(name):
                try:
                    workers += psutil.Process(fleet.procs[name].pid).children(recursive=True)
                except psutil.NoSuchProcess:
                    continue
        if workers:
            victim = rng.choice(workers)
            try:
                victim.send_signal(signal.SIGKILL)
                return "worker"
            except psutil.NoSuchProcess:
                return ""
        kind = "agent"
    live = [a for a in agents if fleet.alive(a)]
    if not live:
        return ""
    name = rng.choice(live)
    fleet.kill(name)
    return f"agent:{name}"


def _restart(fleet: Fleet, rng: random.Random, down: dict[str, float], now: float) -> None:
    """Restart what is down once its time has come (some stay down past the node lease,
    so their claims must be requeued; others come back at once and resume them)."""
    for name in list(fleet.procs):
        if fleet.alive(name):
            down.pop(name, None)
            continue
        if name not in down:
            down[name] = now + rng.choice([0.0, 0.5, 5.0, 5.0, 5.0])
        elif now >= down[name]:
            del down[name]
            if name.startswith("leader"):
                fleet.leader(name)
            else:
                fleet.agent(name)


def check_accounting(csv_path: Path, mini_batches: int, report: ChaosReport) -> None:
    attempts: dict[int, dict[int, str]] = {}
    if not csv_path.exists():  # a job that failed before any mini-batch ran has no report
        report.problems.append(f"no {csv_path.name}")
        return
    with open(csv_path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            mb, attempt = int(row["mini_batch_id"]), int(row["attempt"])
            if attempt in attempts.setdefault(mb, {}):
                report.problems.append(f"mini-batch {mb} attempt {attempt} has two rows")
            attempts[mb][attempt] = row["status"]
            report.attempts += 1
            report.requeues += row["status"] == "requeued"
    for mb in range(mini_batches):
        seen = attempts.get(mb, {})
        if not seen:
            report.problems.append(f"mini-batch {mb} has no row")
        elif sorted(seen) != list(range(1, len(seen) + 1)):
            report.problems.append(f"mini-batch {mb}: attempts {sorted(seen)} are not 1..n")
        elif seen[len(seen)] != "succeeded":
            report.problems.append(f"mini-batch {mb}: last attempt is {seen[len(seen)]}")
        elif any(s == "succeeded" for a, s in seen.items() if a != len(seen)):
            report.problems.append(f"mini-batch {mb}: succeeded twice")
    report.accounted = not report.problems


def count_duplicate_commits(job_root: Path) -> int:
    """Task attempts with more than one ``done/`` file (two nodes committed one attempt)."""
    names: Counter[str] = Counter()
    done = job_root / "tasks" / "done"
    if not done.is_dir():  # a job that never split (check_accounting says why)
        return 0
    for shard in done.iterdir():
        for entry in shard.iterdir():
            task = ".".join(entry.name.split(".")[:3])
            names[task] += 1
    return sum(1 for n in names.values() if n > 1)


def run_chaos(
    root: Path,
    *,
    items: int = 20_000,
    size: int = 10,
    per_mb_s: float = 0.02,
    agents: int = 3,
    leaders: int = 2,
    every_s: float = 2.0,
    seed: int = 7,
    timeout_s: float = 600,
    spool: Path | None = None,
    views: dict[str, Path] | None = None,
    chaos_s: float = 1e9,
) -> ChaosReport:
    rng = random.Random(seed)
    job = make_job(root, items, size, per_mb_s)
    expected = undisturbed_output(root, job)
    fleet = Fleet(spool or root / "spool", root / "daemon-logs", views=views or {})
    mbs = (items + size - 1) // size
    report = ChaosReport(items, mbs, 0.0)
    leader_names = [f"leader{i}" for i in range(leaders)]
    agent_names = [f"node{i}" for i in range(agents)]
    try:
        for name in leader_names:
            fleet.leader(name)
        for name in agent_names:
            fleet.agent(name)
        start = time.monotonic()
        job_id = fleet.submit(job)
        next_kill = start + every_s
        down: dict[str, float] = {}
        while fleet.final(job_id) is None:
            now = time.monotonic()
            if now - start > timeout_s:
                raise AssertionError(f"job not done after {timeout_s} s: {report.line()}")
            if now >= next_kill and now - start < chaos_s:
                what = _kill_one(fleet, rng, agent_names, leader_names)
                if what:
                    report.kills[what.split(":")[0]] += 1
                    report.events.append(f"{time.strftime('%H:%M:%S')} kill {what}")
                next_kill = now + every_s * rng.uniform(0.5, 1.5)
            _restart(fleet, rng, down, now)
            time.sleep(0.05)
        report.seconds = time.monotonic() - start
        final = fleet.final(job_id)
        job_root = fleet.spool / "jobs" / job_id
        if final is None or final.get("state") != "Completed":
            report.problems.append(f"job ended {final}")
        out = job_root / "outputs" / "out.txt"
        report.identical = out.exists() and out.read_bytes() == expected
        if not report.identical:
            report.problems.append("output differs from the undisturbed run")
        check_accounting(
            job_root / "logs" / "sys" / "job_report" / "processed_mini-batches.csv", mbs, report
        )
        report.duplicates = count_duplicate_commits(job_root)
    finally:
        fleet.close()
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--items", type=int, default=20_000)
    p.add_argument("--size", type=int, default=10)
    p.add_argument("--per-mb", type=float, default=0.02)
    p.add_argument("--agents", type=int, default=3)
    p.add_argument("--leaders", type=int, default=2)
    p.add_argument("--every", type=float, default=2.0)
    p.add_argument("--chaos-s", type=float, default=1e9, help="stop killing after this long")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--root", type=Path, default=None)
    p.add_argument("--events", action="store_true", help="print every kill")
    args = p.parse_args(argv)
    root = args.root or Path(os.environ.get("TMPDIR", "/tmp")) / f"prsd-chaos-{os.getpid()}"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    report = run_chaos(
        root,
        items=args.items,
        size=args.size,
        per_mb_s=args.per_mb,
        agents=args.agents,
        leaders=args.leaders,
        every_s=args.every,
        seed=args.seed,
        chaos_s=args.chaos_s,
        timeout_s=3600,
    )
    print(report.line())
    if args.events:
        print("\n".join(report.events))
    for problem in report.problems[:20]:
        print("  problem:", problem)
    return 0 if not report.problems and report.duplicates == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
