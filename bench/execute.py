"""Running one case once with one runner, and checking its output."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.measure import (
    STALL_S,
    STALLED,
    StallWatch,
    TreeSampler,
    bench_env,
    first_mark,
    kill_tree,
    run_measured,
    tail,
)
from bench.plan import Plan
from bench.prsd_job import ENTRY_DIR, job_output, job_yaml, make_job_folder

if TYPE_CHECKING:
    from bench.cases import Case

REPO = Path(__file__).resolve().parent.parent
RUN_TIMEOUT_S = 300.0
ALTERNATIVES = {"sequential": "sequential", "pool": "pool", "dask": "dask", "ray": "ray"}


@dataclass
class Sample:
    """One timed run: what it measured, and whether its output was complete and right."""

    workload: str
    variant: str
    runner: str
    repeat: int
    status: str  # ok | failed | unsupported | mismatch
    wall_s: float | None = None
    first_run_s: float | None = None
    after_intake_s: float | None = None  # prsd: first run() after state/started.json
    tree_rss_mb: float | None = None
    prsd_rss_mb: float | None = None
    output_sha256: str | None = None
    output_lines: int | None = None
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def digest(path: Path) -> tuple[str, int]:
    """sha256 and line count of a file."""
    h = hashlib.sha256()
    lines = 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
            lines += block.count(b"\n")
    return h.hexdigest(), lines


def tabular_unsupported(kind: str) -> str | None:
    """Why prsd cannot split a ``kind`` input yet, or None once it can."""
    if kind == "files":
        return None
    from prsd.inputsplit import planner

    if kind not in planner.PLANNERS:
        return f"prsd has no {kind} splitter yet (prsd/inputsplit/planner.py PLANNERS)"
    return None


def run_once(case: Case, runner: str, work: Path, repeat: int) -> Sample:
    """Run ``case`` once with ``runner`` in a fresh folder under ``work``; removes it after."""
    run_dir = work / f"{case.workload}-{case.variant}-{runner}-{repeat}"
    shutil.rmtree(run_dir, ignore_errors=True)
    (run_dir / "marks").mkdir(parents=True)
    sample = Sample(case.workload, case.variant, runner, repeat, "failed")
    try:
        if runner in ("prsd-run", "prsd-run-spawn"):
            _prsd_run(case, run_dir, sample, fork_server=runner == "prsd-run")
        elif runner == "prsd-daemons":
            _prsd_daemons(case, run_dir, sample, agents=1, workers=case.workers)
        elif runner == "prsd-run-warm":
            _prsd_daemons(case, run_dir, sample, agents=1, workers=case.workers, via_run=True)
        else:
            _alternative(case, runner, run_dir, sample)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    return sample


def _env(case: Case, run_dir: Path) -> dict[str, str]:
    return bench_env(
        {**case.env, "BENCH_MARK_DIR": str(run_dir / "marks"), "PYTHONPATH": str(REPO)}
    )


def _finish(sample: Sample, output: Path | None, started_wall: float, run_dir: Path) -> None:
    """Digest the output and the first-run mark; status stays 'failed' without output."""
    if output is None or not output.exists():
        sample.note = sample.note or "no output file"
        return
    sample.output_sha256, sample.output_lines = digest(output)
    mark = first_mark(run_dir / "marks")
    if mark is not None:
        sample.first_run_s = round(mark - started_wall, 4)
    sample.status = "ok"


def _alternative(case: Case, runner: str, run_dir: Path, sample: Sample) -> None:
    output = run_dir / "out.txt"
    plan = Plan(
        script=str(ENTRY_DIR / case.script),
        input_kind=case.input_kind,
        input_path=case.input_path,
        mini_batch_size=case.mini_batch_size,
        workers=case.workers,
        output=str(output),
    )
    plan.dump(run_dir / "plan.json")
    cmd = [
        sys.executable,
        "-m",
        f"bench.runners.{ALTERNATIVES[runner]}",
        str(run_dir / "plan.json"),
    ]
    r = run_measured(
        cmd, env=_env(case, run_dir), cwd=REPO, log=run_dir / "log.txt", timeout_s=RUN_TIMEOUT_S
    )
    sample.wall_s, sample.tree_rss_mb = round(r.wall_s, 4), round(r.peaks.tree_mb, 1)
    if r.returncode != 0:
        sample.note = f"exit {r.returncode}: {r.tail[-600:]}"
        return
    _finish(sample, output, r.started_wall, run_dir)


def _job(case: Case, run_dir: Path, workers: int) -> Path:
    text = job_yaml(
        name=f"bench-{case.workload.lower()}",
        input_path=case.input_path,
        input_format=case.input_kind,
        mini_batch_size=case.prsd_mini_batch_size,
        workers=workers,
        script=case.script,
        env={**case.env, "BENCH_MARK_DIR": str(run_dir / "marks")},
    )
    return make_job_folder(run_dir / "job", text)


def _prsd_run(case: Case, run_dir: Path, sample: Sample, *, fork_server: bool = True) -> None:
    why = tabular_unsupported(case.input_kind)
    if why is not None:
        sample.status, sample.note = "unsupported", why
        return
    job, spool, rss_file = _job(case, run_dir, case.workers), run_dir / "spool", run_dir / "rss.txt"
    cmd = [sys.executable, "-m", "bench.prsd_launch", str(rss_file), "run", str(job)]
    cmd += ["--spool", str(spool), "--node-id", "n1"]
    cmd += [] if fork_server else ["--no-fork-server"]
    r = run_measured(
        cmd,
        env=_env(case, run_dir),
        cwd=REPO,
        log=run_dir / "log.txt",
        timeout_s=RUN_TIMEOUT_S,
        progress=lambda: job_progress(spool),
    )
    sample.wall_s, sample.tree_rss_mb = round(r.wall_s, 4), round(r.peaks.tree_mb, 1)
    if r.returncode == STALLED:
        sample.note = f"stalled: no progress for {STALL_S:.0f} s ({job_progress(spool)})"
        return
    try:
        sample.prsd_rss_mb = round(int(rss_file.read_text()) / 1024, 1)
    except (OSError, ValueError):
        sample.prsd_rss_mb = round(r.peaks.prsd_max_mb, 1) or None
    if r.returncode != 0:
        sample.note = f"prsd run exit {r.returncode}: {r.tail[-600:]}"
        return
    _finish(sample, job_output(spool), r.started_wall, run_dir)
    sample.after_intake_s = after_intake(spool, run_dir / "marks")


def after_intake(spool: Path, marks: Path) -> float | None:
    """Seconds from the job's intake (``state/started.json``) to the first ``run()``."""
    mark = first_mark(marks)
    for started in spool.glob("jobs/*/state/started.json"):
        try:
            return (
                round(mark - float(json.loads(started.read_bytes())["unix_s"]), 4) if mark else None
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None
    return None


@dataclass
class Daemons:
    """A leader and ``agents`` agents on one spool, as separate processes."""

    leader: subprocess.Popen[bytes]
    agents: list[subprocess.Popen[bytes]]
    sampler: TreeSampler

    def stop(self) -> None:
        self.sampler.sample()
        self.sampler.stop()
        procs = [*self.agents, self.leader]
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        for p in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                kill_tree(p.pid)
                p.wait()


LEADER_UNIT = REPO / "systemd" / "prsd-leader.service"


def leader_nice(unit: Path = LEADER_UNIT) -> int:
    """The nice value the leader's systemd unit gives it (``Nice=``; 0 when unset): the
    daemons here run as the units run them."""
    for line in unit.read_text(encoding="utf-8").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "Nice":
            return int(value.strip())
    return 0


def nice_prefix(nice: int) -> list[str]:
    """``nice -n N`` before a command: a lower value needs root, so without it the
    command keeps its inherited priority (see :func:`niceness`)."""
    if nice == 0 or (nice < 0 and os.geteuid() != 0):
        return []
    return ["nice", "-n", str(nice)]


def niceness(pid: int) -> int | None:
    """A running process's nice value (None once it is gone)."""
    try:
        return os.getpriority(os.PRIO_PROCESS, pid)
    except OSError:
        return None


def start_daemons(
    spool: Path,
    run_dir: Path,
    env: dict[str, str],
    agents: int,
    extra: list[str] | None = None,
    agent_spools: list[Path] | None = None,
) -> Daemons:
    """Start the leader and the agents; returns once the leader holds the lease and every
    agent has written a heartbeat (warm daemons: their start-up is not timed).

    ``agent_spools``: agent i reaches the spool through ``agent_spools[i]`` (its own
    mount of the same folder) instead of ``spool``."""
    base = [sys.executable, "-m", "bench.prsd_launch"]
    logs = run_dir / "logs"
    logs.mkdir(exist_ok=True)

    def spawn(
        name: str, args: list[str], where: Path = spool, nice: int = 0
    ) -> subprocess.Popen[bytes]:
        with open(logs / f"{name}.txt", "wb") as out:  # the child keeps its own descriptor
            return subprocess.Popen(
                [
                    *nice_prefix(nice),
                    *base,
                    str(run_dir / f"rss-{name}.txt"),
                    *args,
                    "--spool",
                    str(where),
                ],
                env=env,
                cwd=REPO,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    spool.mkdir(parents=True, exist_ok=True)
    # The leader's unit gives it a lower nice value (systemd/prsd-leader.service): so here.
    leader = spawn(
        "leader", ["leader", "--log-level", "WARNING", *(extra or [])], nice=leader_nice()
    )
    procs = [
        spawn(
            f"a{i}",
            ["agent", "--node-id", f"a{i}", "--log-level", "WARNING"],
            agent_spools[i] if agent_spools else spool,
        )
        for i in range(agents)
    ]
    sampler = TreeSampler([leader.pid, *(p.pid for p in procs)]).__enter__()
    daemons = Daemons(leader, procs, sampler)
    deadline = time.monotonic() + 60
    ready = [spool / "leader" / "heartbeat.json"]
    ready += [spool / "nodes" / f"a{i}.json" for i in range(agents)]
    while not all(path.exists() for path in ready):
        if time.monotonic() > deadline or any(p.poll() is not None for p in [leader, *procs]):
            daemons.stop()
            raise RuntimeError(f"prsd daemons did not start: {tail(logs / 'a0.txt')}")
        time.sleep(0.01)
    return daemons


def job_progress(spool: Path) -> tuple[object, ...]:
    """What moves while a job makes progress: its status counters and pending names."""
    progress: list[object] = []
    for status in sorted(spool.glob("jobs/*/state/status.json")):
        try:
            doc = json.loads(status.read_text())
        except (OSError, ValueError):
            continue
        progress += [doc.get(k) for k in ("planned_mbs", "succeeded_mbs", "failed_mbs", "attempts")]
    return tuple(progress)


def wait_final(spool: Path, job_id: str, timeout_s: float, poll_s: float = 0.01) -> bool:
    """Wait for the job's ``state/final.json``; False on timeout or when it stalls."""
    final = spool / "jobs" / job_id / "state" / "final.json"
    deadline = time.monotonic() + timeout_s
    watch = StallWatch(lambda: job_progress(spool))
    checked = time.monotonic()
    while not final.exists():
        now = time.monotonic()
        if now > deadline:
            return False
        if now - checked > 1.0:
            checked = now
            if watch.stalled():
                return False
        time.sleep(poll_s)
    return True


def final_state(spool: Path, job_id: str) -> str:
    try:
        data = json.loads((spool / "jobs" / job_id / "state" / "final.json").read_text())
    except (OSError, ValueError):
        return "?"
    return str(data.get("state", "?"))


def _hand_over(job: Path, spool: Path, env: dict[str, str], sample: Sample) -> tuple[str, bool]:
    """``prsd run`` where daemons serve the spool: (job id, whether it handed over and ended 0)."""
    cmd = [sys.executable, "-m", "prsd.daemon", "run", str(job), "--spool", str(spool)]
    r = subprocess.run(
        cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False
    )
    first = r.stdout.split("\n", 1)[0].split()
    job_id = first[1] if first[:1] == ["job"] else ""
    handed = "a leader and agents serve the spool" in r.stdout
    if not handed:
        sample.note = "prsd run did not hand the job to the daemons"
    return job_id, r.returncode == 0 and handed and bool(job_id)


def warm_client() -> None:
    """Import what :func:`submit_job` needs, before a timer starts: W9 times the fleet
    from the submit, and Dask's and Ray's clients are imported (and their workers
    started) before theirs (bench/runners/napfleet.py). Measured: 110-130 ms of a
    W9 run's wall in a fresh interpreter (``bench.sidebyside``'s children)."""
    import prsd.spool.opening
    import prsd.submit  # noqa: F401


def submit_job(job: Path, spool: Path) -> str:
    """``prsctl submit`` as a call: the job id."""
    from prsd.spool.opening import open_spool
    from prsd.submit import submit

    job_id, _ = submit(job, open_spool(spool))
    return job_id


def _prsd_daemons(
    case: Case, run_dir: Path, sample: Sample, *, agents: int, workers: int, via_run: bool = False
) -> None:
    """The job on running daemons: submitted (``prsd.submit``), or with ``via_run`` by
    ``prsd run``, which hands it to them, timed from its start to its exit."""
    why = tabular_unsupported(case.input_kind)
    if why is not None:
        sample.status, sample.note = "unsupported", why
        return
    job, spool = _job(case, run_dir, workers), run_dir / "spool"
    daemons = start_daemons(spool, run_dir, _env(case, run_dir), agents)
    try:
        started_wall, start = time.time(), time.perf_counter()
        if via_run:
            job_id, done = _hand_over(job, spool, _env(case, run_dir), sample)
        else:
            job_id = submit_job(job, spool)
            done = wait_final(spool, job_id, RUN_TIMEOUT_S)
        sample.wall_s = round(time.perf_counter() - start, 4)
    finally:
        daemons.stop()
    sample.tree_rss_mb = round(daemons.sampler.peaks.tree_mb, 1)
    sample.prsd_rss_mb = round(daemons.sampler.peaks.prsd_max_mb, 1)
    state = final_state(spool, job_id) if done else f"stalled or timed out {job_progress(spool)}"
    if state != "Completed":
        sample.note = f"job {state}: {tail(run_dir / 'logs' / 'leader.txt')[-400:]}"
        return
    _finish(sample, job_output(spool), started_wall, run_dir)
    sample.after_intake_s = after_intake(spool, run_dir / "marks")
