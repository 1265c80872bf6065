"""The prsd-only workloads: W6 (a million input files), W7 (spool syscalls); W8 is in fleet.py."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

from bench.execute import (
    REPO,
    digest,
    final_state,
    job_progress,
    start_daemons,
    submit_job,
)
from bench.inputs import file_set
from bench.measure import STALL_S, StallWatch, bench_env, tail
from bench.prsd_job import job_output, job_yaml, make_job_folder
from bench.stats import median

if TYPE_CHECKING:
    from pathlib import Path

METADATA_SYSCALLS = [
    "open",
    "openat",
    "creat",
    "stat",
    "lstat",
    "newfstatat",
    "statx",
    "access",
    "faccessat",
    "faccessat2",
    "rename",
    "renameat",
    "renameat2",
    "unlink",
    "unlinkat",
    "mkdir",
    "mkdirat",
    "rmdir",
    "link",
    "linkat",
    "symlink",
    "symlinkat",
    "readlink",
    "readlinkat",
    "getdents64",
    "fsync",
    "fdatasync",
    "chmod",
    "fchmod",
    "fchmodat",
    "utimensat",
    "truncate",
    "ftruncate",
]


def echo_digest(root: Path) -> tuple[str, int]:
    """The expected W1 output (one file name per line, input order) without running anything."""
    names = sorted(os.listdir(root))
    h = hashlib.sha256("".join(f"{n}\n" for n in names).encode())
    return h.hexdigest(), len(names)


def echo_job(
    run_dir: Path, root: Path, mbs: int, workers: int, name: str, *, declared: bool = True
) -> Path:
    """The echo job on ``root``; ``declared`` False: no ``input_format`` line (the leader
    infers the format from the files at intake)."""
    text = job_yaml(
        name=name,
        input_path=str(root),
        input_format="files",
        mini_batch_size=str(mbs),
        workers=workers,
        script="echo.py",
        env={"BENCH_MARK_DIR": str(run_dir / "marks")},
    )
    if not declared:
        text = text.replace("input_format: files\n", "", 1)
    return make_job_folder(run_dir / "job", text)


def daemon_env(run_dir: Path) -> dict[str, str]:
    (run_dir / "marks").mkdir(parents=True, exist_ok=True)
    return bench_env({"BENCH_MARK_DIR": str(run_dir / "marks"), "PYTHONPATH": str(REPO)})


def double_claims(spool: Path, job_id: str) -> int:
    """Mini-batches that more than one attempt finished successfully (must be 0)."""
    report = spool / "jobs" / job_id / "logs" / "sys" / "job_report" / "processed_mini-batches.csv"
    with open(report, newline="", encoding="utf-8") as f:
        wins = Counter(r["mini_batch_id"] for r in csv.DictReader(f) if r["status"] == "succeeded")
    return sum(1 for n in wins.values() if n > 1)


# --- W6 ---------------------------------------------------------------------------------


def _first_pending(spool: Path, job_id: str, folder: str = "pending") -> bool:
    """A task file in ``tasks/<folder>/<shard or node>/`` (pending: claimable; claimed,
    done: an agent took one)."""
    pending = spool / "jobs" / job_id / "tasks" / folder
    try:
        with os.scandir(pending) as shards:
            for shard in shards:
                with os.scandir(shard.path) as tasks:
                    if any(True for _ in tasks):
                        return True
    except OSError:
        return False
    return False


def _status_query(spool: Path, job_id: str) -> tuple[float, dict[str, Any] | None]:
    """``prsctl status JOB --json``: seconds it took and its document (None: it failed)."""
    start = time.perf_counter()
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "prsd.cli.prsctl",
            "status",
            job_id,
            "--json",
            "--spool",
            str(spool),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    took = time.perf_counter() - start
    try:
        doc = json.loads(r.stdout) if r.returncode == 0 else None
    except ValueError:
        doc = None
    return took, doc if isinstance(doc, dict) else None


def _status_file(spool: Path, job_id: str) -> dict[str, Any] | None:
    try:
        doc = json.loads((spool / "jobs" / job_id / "state" / "status.json").read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _taken_in(spool: Path, job_id: str) -> float | None:
    """The wall time the leader took the job in (``state/started.json``), once written."""
    try:
        doc = json.loads((spool / "jobs" / job_id / "state" / "started.json").read_bytes())
        return float(doc["unix_s"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _marks(spool: Path, job_id: str, at: float, start_wall: float, res: dict[str, Any]) -> None:
    """Fill in the marks of ``res`` reached by now (``at`` s after the submit)."""
    if "first_claimable_s" not in res and _first_pending(spool, job_id):
        res["first_claimable_s"] = at
    if "first_claimed_s" not in res and any(
        _first_pending(spool, job_id, f) for f in ("claimed", "done")
    ):
        res["first_claimed_s"] = at
        res.setdefault("first_claimable_s", res["first_claimed_s"])
    if "taken_in_s" not in res:
        taken = _taken_in(spool, job_id)
        if taken is not None:
            res["taken_in_s"] = round(taken - start_wall, 3)
    if "all_planned_s" not in res:
        doc = _status_file(spool, job_id)
        if doc is not None and doc.get("split_done"):
            res["all_planned_s"] = at


def _watch_w6(
    spool: Path,
    job_id: str,
    start: float,
    timeout_s: float,
    res: dict[str, Any],
    start_wall: float,
) -> None:
    """Poll a W6 job until it ends, stalls or times out; fills ``res`` with the figures:
    from the submit, the job taken in (``taken_in_s``), the first task in ``pending/``
    (``first_claimable_s``), the first task claimed (``first_claimed_s``), all planned."""
    final = spool / "jobs" / job_id / "state" / "final.json"
    next_status = start + 0.5
    watch = StallWatch(lambda: job_progress(spool))
    status_times: list[float] = []
    failures = 0
    while not final.exists() and time.perf_counter() - start < timeout_s:
        now = time.perf_counter()
        if watch.stalled():
            res["stalled"] = f"no progress for {STALL_S:.0f} s: {job_progress(spool)}"
            break
        _marks(spool, job_id, round(now - start, 3), start_wall, res)
        if now >= next_status:
            took, sdoc = _status_query(spool, job_id)
            status_times.append(took)
            failures += sdoc is None
            next_status = time.perf_counter() + 1.0
        time.sleep(0.005 if "first_claimed_s" not in res else 0.05)
    res["wall_s"] = round(time.perf_counter() - start, 3)
    _marks(spool, job_id, res["wall_s"], start_wall, res)
    if final.exists():  # ended between two looks: the end bounds what was not seen
        for key in ("first_claimable_s", "first_claimed_s"):
            if key not in res:
                res[key] = res["wall_s"]
                res[key[:-2] + "_note"] = "an upper bound: the job ended between two looks"
    for key in ("first_claimable_s", "first_claimed_s"):
        if key in res and "taken_in_s" in res:
            res[key[:-2] + "_after_intake_s"] = round(res[key] - res["taken_in_s"], 3)
    res["state"] = final_state(spool, job_id) if final.exists() else "not finished"
    if "all_planned_s" not in res and res["state"] == "Completed":
        res["all_planned_s"] = res["wall_s"]
        res["all_planned_note"] = "an upper bound: the job ended before status.json said split_done"
    res["status_max_s"] = round(max(status_times), 3) if status_times else None
    res["status_median_s"] = median(status_times)
    res["status_queries"] = len(status_times)
    res["status_failures"] = failures


def _list_once(root: Path) -> int:
    """List the input folder once, untimed: after the other workloads its million names
    may be out of the kernel's caches, and a cold listing took W6's first task from
    1.6 s to 3.5 s in one full run (as W1-W4 read their inputs once before timing)."""
    count = 0
    for _folder, _dirs, names in os.walk(root):
        count += len(names)
    return count


def w6_scale(
    files: int, work: Path, timeout_s: float = 400, *, declared: bool = True
) -> dict[str, Any]:
    """A folder of ``files`` empty files through a leader and an agent (mini-batch 100);
    ``declared`` False: the job does not say ``input_format: files``."""
    root = file_set(files, 0)
    _list_once(root)
    run_dir = work / "W6"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    spool = run_dir / "spool"
    job = echo_job(run_dir, root, 100, 2, "bench-w6", declared=declared)
    res: dict[str, Any] = {"files": files, "mini_batch_size": 100, "declared": declared}
    daemons = start_daemons(spool, run_dir, daemon_env(run_dir), 1)
    try:
        start_wall, start = time.time(), time.perf_counter()
        job_id = submit_job(job, spool)
        _watch_w6(spool, job_id, start, timeout_s, res, start_wall)
        daemons.sampler.sample()
        peaks = daemons.sampler.peaks.prsd_mb
        res["leader_rss_mb"] = round(peaks.get(daemons.leader.pid, 0), 1)
        res["agent_rss_mb"] = round(max(peaks.get(a.pid, 0) for a in daemons.agents), 1)
    finally:
        daemons.stop()
    marks = [float(p.read_text()) for p in (run_dir / "marks").glob("first-*")]
    res["first_run_s"] = round(min(marks) - start_wall, 3) if marks else None
    out = job_output(spool)
    res["output_ok"] = out is not None and digest(out) == echo_digest(root)
    res["note"] = tail(run_dir / "logs" / "leader.txt")[-300:]
    shutil.rmtree(run_dir, ignore_errors=True)
    return res


# --- W7 ---------------------------------------------------------------------------------

_LINE = re.compile(r"^\d+\s+(\w+)\((.*)$")
_PATH = re.compile(r'"([^"]*)"')
_FD = re.compile(r"^\d+<([^>]*)>")
SPOOL_PARTS = (
    "tasks/pending",
    "tasks/claimed",
    "tasks/done",
    "tasks/returned",
    "results",
    "logs",
    "state",
    "outputs",
    "work",
    "nodes",
    "active",
    "inbox",
    "leader",
)


def categorize(line: str, spool: str) -> tuple[str, str] | None:
    """(operation, place) of one ``strace -f -y`` line; None for a line that is no call.

    The place is the spool folder the call touched (``tasks/pending``, ``results``, ...)
    or ``not spool`` (the interpreter, /proc, /etc, the input); a ``stat`` of an open
    descriptor is the operation ``fstat``.
    """
    m = _LINE.match(line)
    if m is None or "resumed>" in line:
        return None
    call, rest = m.group(1), m.group(2)
    quoted = [p for p in _PATH.findall(rest) if p]
    if quoted:
        path = quoted[-1] if call.startswith("rename") else quoted[0]
    else:
        fd = _FD.match(rest)
        path = fd.group(1) if fd else ""
        if call in ("newfstatat", "statx", "fstat"):
            call = "fstat"
    if not path.startswith(spool + "/"):
        return call, "not spool"
    rel = path[len(spool) + 1 :]
    rel = rel.split("/", 2)[2] if rel.startswith("jobs/") and rel.count("/") >= 2 else rel
    for part in SPOOL_PARTS:
        if rel.startswith(part):
            return call, part
    return call, "spool, other"


def _traced_run(
    items: int, work: Path, counts_only: bool
) -> tuple[Counter[tuple[str, str]], int, float]:
    root = file_set(items, 0)
    run_dir = work / f"W7-{items}-{counts_only}"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    job = echo_job(run_dir, root, 10, 2, "bench-w7")
    trace, spool = run_dir / "trace.txt", run_dir / "s"
    cmd = ["strace", "-f", "-qq", "-o", str(trace), "-e", "trace=" + ",".join(METADATA_SYSCALLS)]
    cmd[1:1] = ["-c"] if counts_only else ["-y"]
    cmd += [sys.executable, "-m", "prsd.daemon", "run", str(job), "--spool", str(spool)]
    cmd += ["--node-id", "n1"]
    start = time.perf_counter()
    r = subprocess.run(cmd, env=daemon_env(run_dir), cwd=REPO, capture_output=True, check=False)
    wall = time.perf_counter() - start
    if r.returncode != 0:
        raise RuntimeError(f"traced prsd run failed: {r.stderr.decode()[-500:]}")
    counts: Counter[tuple[str, str]] = Counter()
    with open(trace, encoding="utf-8", errors="replace") as f:
        for line in f:
            if counts_only:
                parts = line.split()
                if len(parts) >= 5 and parts[-1] in METADATA_SYSCALLS:
                    counts[(parts[-1], "any path")] += int(parts[3])
                continue
            hit = categorize(line, str(spool))
            if hit is not None:
                counts[hit] += 1
    shutil.rmtree(run_dir, ignore_errors=True)
    return counts, -(-items // 10), wall


def _per_mb(
    c1: Counter[tuple[str, str]], c2: Counter[tuple[str, str]], mbs: int
) -> dict[str, float]:
    keys = sorted(set(c1) | set(c2))
    per_mb = {f"{k[0]} {k[1]}": round((c2[k] - c1[k]) / mbs, 3) for k in keys}
    return dict(
        sorted(((k, v) for k, v in per_mb.items() if abs(v) >= 0.005), key=lambda kv: -kv[1])
    )


POLLED = ("active", "leader", "inbox", "nodes", "state")
"""Spool places read on timers (their cost grows with time, not with mini-batches)."""


def _polled(key: tuple[str, str]) -> bool:
    return key[1] in POLLED or key[0] == "getdents64"


def w7_spool_cost(sizes: tuple[int, int], work: Path, *, counts: bool = True) -> dict[str, Any]:
    """Metadata syscalls per mini-batch of W1 (mini-batch 10) through ``prsd run``.

    Two sizes are traced and the difference divided by the difference in mini-batches,
    so the fixed cost (interpreter start, imports, job set-up, final merge) cancels.
    ``strace -f -c`` (``counts``) counts every path; the ``-y`` trace sorts the calls by the spool
    folder they touch. The hot path is the spool's calls that follow the work (task,
    claim, result, commit, logs), less ``fstat`` of open descriptors; listings and
    reads on timers (``POLLED``, and every ``getdents64``) are given per second.
    """
    small, large = sizes
    result: dict[str, Any] = {"items": list(sizes), "mini_batch_size": 10}
    if counts:
        (c1, m1, _), (c2, m2, _) = (_traced_run(n, work, True) for n in (small, large))
        result["strace_c_per_mb"] = round((sum(c2.values()) - sum(c1.values())) / (m2 - m1), 2)
        result["strace_c_by_call"] = _per_mb(c1, c2, m2 - m1)
    (t1, m1, w1), (t2, m2, w2) = (_traced_run(n, work, False) for n in (small, large))
    result["traced_wall_s"] = [round(w1, 2), round(w2, 2)]

    def hot(k: tuple[str, str]) -> bool:
        return k[1] != "not spool" and k[0] != "fstat" and not _polled(k)

    path = _per_mb(
        Counter({k: v for k, v in t1.items() if hot(k)}),
        Counter({k: v for k, v in t2.items() if hot(k)}),
        m2 - m1,
    )
    result["spool_per_mb"] = round(sum(path.values()), 2)
    result["spool_by_call"] = path
    polled = {f"{k[0]} {k[1]}": round(v / w2, 1) for k, v in t2.items() if _polled(k)}
    result["polled_per_s"] = dict(sorted(polled.items(), key=lambda kv: -kv[1]))
    rest = {k: v for k, v in t2.items() if not hot(k) and not _polled(k)}
    result["not_hot_large_run"] = {f"{k[0]} {k[1]}": v for k, v in sorted(rest.items())}
    return result
