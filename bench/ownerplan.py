"""``python -m bench.ownerplan``: what planning a job's input as its owner costs.

Root daemons (one leader, one agent with 2 worker slots) on a fresh spool run W4 (the
tabular workload: its CSV cut by bytes, its Parquet by row groups) and a
partitioned-table job (the W4 CSV with ``partition_keys: [name]``, five groups), each
owned by root (planned inside the leader) and by a real user made for the run (planned
by the owner's input planner process where the code has one). Each job's wall time is
taken from its rename into ``inbox/`` to its ``state/final.json``. Run it as root under
``flock /tmp/prsd-users.lock`` (it makes a user and lets others enter the folders above
the interpreter for the run); run it with ``PYTHONPATH`` naming another checkout to
measure that code ("before").

Prints one line per (job, owner): the median and each run, in seconds.

``--plan-only`` times planning alone, without daemons (this checkout's code only): the
planner's generator in this process (what a root-owned job does, and what every job
did before the input planner existed) against the input planner process started as
the user (interpreter start, imports, the pipe), from start to the plan's end.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import shutil
import stat
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from bench.cases import TABLE_MB_BYTES
from bench.inputs import table_set

SCRIPT = """
def init():
    pass
def run(mini_batch):
    out = mini_batch[["id", "name"]].copy()
    out["value"] = mini_batch["qty"] * 3 + 1
    return out
"""

KEYED = """
def init():
    pass
def run(mini_batch, mini_batch_context):
    out = mini_batch[["id", "name"]].copy()
    out["value"] = mini_batch["qty"] * 3 + 1
    return out
"""


def _yaml(name: str, path: Path, fmt: str, extra: str) -> str:
    return (
        textwrap.dedent(f"""\
        type: parallel
        name: {name}
        input_data: {path}
        input_format: {fmt}
        mini_batch_size: "{TABLE_MB_BYTES}"
        resources: {{max_concurrency_per_instance: 2}}
        task:
          code: ./code
          entry_script: score.py
          append_row_to: ./outputs/out.txt
          environment: {{python: {sys.executable}}}
        """)
        + extra
    )


def _open_interpreter() -> list[tuple[Path, int]]:
    changed = []
    for place in (os.path.realpath(sys.executable), os.__file__):
        for folder in reversed(Path(os.path.realpath(place)).parents):
            mode = folder.stat().st_mode
            if not mode & stat.S_IXOTH and all(folder != f for f, _ in changed):
                changed.append((folder, mode))
                folder.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)
    return changed


def _run_one(spool: Path, name: str, yaml_text: str, script: str, uid: int, gid: int) -> float:
    staging = spool / "inbox" / f".{name}"
    (staging / "code").mkdir(parents=True)
    (staging / "code" / "score.py").write_text(textwrap.dedent(script))
    (staging / "job.yaml").write_text(yaml_text)
    for folder, dirs, files in os.walk(staging):
        for entry in [*dirs, *files]:
            os.chown(os.path.join(folder, entry), uid, gid)
    os.chown(staging, uid, gid)
    started = time.monotonic()
    staging.rename(spool / "inbox" / name)
    while True:
        for job in (spool / "jobs").iterdir():
            final = job / "state" / "final.json"
            if job.name.startswith(name + "-") and final.exists():
                state = json.loads(final.read_bytes())["state"]
                if state != "Completed":
                    raise SystemExit(f"{name}: {state}: {json.loads(final.read_bytes())}")
                return time.monotonic() - started
        if time.monotonic() - started > 600:
            raise SystemExit(f"{name}: no end in 600 s")
        time.sleep(0.02)


def _plan_only(csv_path: Path, parquet_path: Path, user: pwd.struct_passwd, repeats: int) -> None:
    from prsd.jobspec.load import load_job_spec
    from prsd.leader.plan.planhelper import encode_request, planned_batches
    from prsd.leader.plan.planstream import HelperPlan, InProcessPlan, PlanSource
    from prsd.owner import identity

    run_as = identity(user.pw_uid, user.pw_gid)
    cases = (
        ("W4 csv", csv_path, "csv", ""),
        ("W4 parquet", parquet_path, "parquet", ""),
        ("partitioned csv", csv_path, "csv", "partition_keys: [name]\n"),
    )
    for label, path, fmt, extra in cases:
        spec_dir = Path(tempfile.mkdtemp(prefix="prsd-plan-"))
        (spec_dir / "code").mkdir()
        (spec_dir / "code" / "score.py").write_text(SCRIPT)
        (spec_dir / "job.yaml").write_text(_yaml("plan", path, fmt, extra))
        spec = load_job_spec(spec_dir)
        for mode in ("in-process", "planner"):
            times = []
            for _ in range(repeats):
                folder = Path(tempfile.mkdtemp(prefix="prsd-plan-"))
                folder.chmod(0o755)
                for name in ("partitions", "mltable"):
                    (folder / name).mkdir()
                    os.chown(folder / name, user.pw_uid, user.pw_gid)
                started = time.monotonic()
                source: PlanSource
                if mode == "in-process":
                    mbs = planned_batches(spec, folder, None, None, lambda o: None)
                    source = InProcessPlan(mbs, spec.input.name)
                else:
                    request = encode_request(spec, folder, None)
                    source = HelperPlan.start(
                        run_as, request, on_skip=lambda p, w: None, on_order=lambda o: None,
                        name=spec.input.name,
                    )  # fmt: skip
                while not source.ended:
                    source.pull(256, 0.05)
                source.close()
                times.append(time.monotonic() - started)
                shutil.rmtree(folder)
            shown = " ".join(f"{t:.2f}" for t in times)
            median = statistics.median(times)
            print(f"plan {label:16} {mode:10} median {median:5.2f} s  ({shown})", flush=True)
        shutil.rmtree(spec_dir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bytes", type=int, default=50_000_000, help="W4's CSV size")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--plan-only", action="store_true", help="time planning alone")
    args = parser.parse_args()
    csv_path, parquet_path = table_set(args.bytes, TABLE_MB_BYTES)
    jobs = {
        "W4 csv": ("w4csv", csv_path, "csv", "", SCRIPT),
        "W4 parquet": ("w4parquet", parquet_path, "parquet", "", SCRIPT),
        "partitioned csv": ("keyed", csv_path, "csv", "partition_keys: [name]\n", KEYED),
    }
    name = f"prsdbench{os.getpid()}"
    subprocess.run(["useradd", "-M", "-s", "/usr/sbin/nologin", name], check=True)
    changed = _open_interpreter()
    base = Path(tempfile.mkdtemp(prefix="prsd-ownerplan-"))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        user = pwd.getpwnam(name)
        if args.plan_only:
            _plan_only(csv_path, parquet_path, user, args.repeats)
            return
        base.chmod(0o755)
        spool = base / "spool"
        env = dict(os.environ, PRSD_GPU_COUNT="0", PRSD_ALLOWED_ROOTS=str(csv_path.parent))
        log = open(base / "daemons.log", "wb")  # noqa: SIM115 - closed with the daemons
        for role in (["leader"], ["agent", "--node-id", "n1"]):
            command = [sys.executable, "-m", "prsd.daemon", *role, "--spool", str(spool)]
            procs.append(subprocess.Popen(command, env=env, stdout=log, stderr=log))
        while not (spool / "inbox").is_dir():
            time.sleep(0.05)
        (spool / "inbox").chmod(0o1777)
        for label, (short, path, fmt, extra, script) in jobs.items():
            for owner, (uid, gid) in (("root", (0, 0)), ("user", (user.pw_uid, user.pw_gid))):
                runs = []
                for i in range(args.repeats):
                    job = f"{short}-{owner}-{i}"
                    runs.append(
                        _run_one(spool, job, _yaml(job, path, fmt, extra), script, uid, gid)
                    )
                shown = " ".join(f"{r:.2f}" for r in runs)
                print(f"{label:16} {owner:5} median {statistics.median(runs):6.2f} s  ({shown})")
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(60)
        for folder, mode in reversed(changed):
            folder.chmod(stat.S_IMODE(mode))
        subprocess.run(["userdel", name], check=False)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
