"""Submitting a job folder to a spool (``prsctl submit`` and ``prsd run``).

The folder's spec is loaded first, so a bad spec is refused before anything is
written. Then ``job.yaml``, a snapshot of the code folder and ``origin.json`` (the
folder the user's relative input paths mean) are copied under a dot name in
``inbox/`` and renamed into place in one step. Inputs and side inputs are read in
place and never copied: datasets are large.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from prsd.errors import JobSpecError, PrsdError
from prsd.jobspec import JobSpec
from prsd.jobspec.load import find_job_file, load_job_spec
from prsd.leader.planner import plan_mini_batches
from prsd.leader.rerun import RETRY_FILE, RetryPlan, succeeded_pieces
from prsd.storage.atomic import fsync_dir, fsync_tree, move_verified, write_atomic
from prsd.storage.jobid import make_job_id

if TYPE_CHECKING:
    from prsd.storage.layout import JobLayout, SpoolLayout

MAX_SNAPSHOT_BYTES = 256 * 1024 * 1024
_SKIP_NAMES = {"__pycache__", ".git", ".venv", ".mypy_cache", ".pytest_cache", "node_modules"}


def submit(job_dir: Path, spool: SpoolLayout, *, name: str | None = None) -> tuple[str, JobSpec]:
    """Validate ``job_dir`` and drop it into the spool's inbox; returns (job id, spec).

    Raises:
        JobSpecError: the spec cannot be run as written (nothing was written).
        OSError: the spool is not writable.
    """
    job_dir = job_dir.absolute()
    if not job_dir.is_dir():
        raise JobSpecError("", str(job_dir), "is not a folder (a job is a folder with job.yaml)")
    spec = load_job_spec(job_dir, spool_job_dir=job_dir)
    job_id = make_job_id(name or spec.name)
    staging = spool.inbox / f".{job_id}"
    staging.mkdir(parents=True)
    try:
        shutil.copyfile(find_job_file(job_dir), staging / "job.yaml")
        skip = _skip_paths(spec, spool)
        snapshot_code(Path(spec.code_dir), staging / "code", skip)
        origin = {"job_dir": str(job_dir), "name": name or ""}
        write_atomic(staging / "origin.json", json.dumps(origin, indent=1).encode())
        fsync_tree(staging)  # durable before it is published (docs/spool.md, Durability)
        if not move_verified(staging, spool.inbox / job_id):
            raise OSError(f"could not move {staging} into the inbox")
        fsync_dir(spool.inbox)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return job_id, spec


def _skip_paths(spec: JobSpec, spool: SpoolLayout) -> set[str]:
    """Paths never copied into the code snapshot: the data and the spool itself."""
    skip = {os.path.realpath(p) for p in spec.input.paths}
    skip.update(os.path.realpath(p) for p in spec.side_inputs.values())
    skip.add(os.path.realpath(spool.root))
    return skip


def snapshot_code(src: Path, dest: Path, skip: set[str]) -> int:
    """Copy the code folder (without data, caches, VCS folders); returns bytes copied.

    Raises:
        JobSpecError: the folder is larger than MAX_SNAPSHOT_BYTES without its inputs.
    """
    total = 0
    for root, dirs, files in os.walk(src):
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in _SKIP_NAMES and os.path.realpath(os.path.join(root, d)) not in skip
        )
        rel = os.path.relpath(root, src)
        target = dest / rel if rel != "." else dest
        target.mkdir(parents=True, exist_ok=True)
        for f in files:
            path = os.path.join(root, f)
            if os.path.realpath(path) in skip or not os.path.isfile(path):
                continue
            total += os.path.getsize(path)
            if total > MAX_SNAPSHOT_BYTES:
                raise JobSpecError(
                    "task.code",
                    str(src),
                    f"the code folder holds more than {MAX_SNAPSHOT_BYTES >> 20} MB besides the "
                    "inputs; move data out of it and pass it as an input or side input",
                )
            shutil.copy2(path, target / f)
    return total


def submit_retry(spool: SpoolLayout, job_id: str, *, name: str | None = None) -> tuple[str, int]:
    """A new job running only the mini-batches job ``job_id`` did not finish successfully.

    The earlier job's ``job.yaml``, code snapshot and ``origin.json`` are copied with a
    ``retry.json`` (see :mod:`prsd.leader.rerun`); returns (new job id, mini-batches to run).

    Raises:
        PrsdError: the job has not ended, or every mini-batch succeeded.
        OSError: the spool is not writable.
    """
    old = spool.job(job_id)
    if not old.final.exists():
        raise PrsdError(f"job {job_id} has not ended; retry it once it has")
    spec = JobSpec.from_json(old.spec.read_text(encoding="utf-8"))
    total = _total_mbs(old, spec)
    done = set(succeeded_pieces(old))
    run = tuple(i for i in range(total) if i not in done)
    if not run:
        raise PrsdError(f"every mini-batch of job {job_id} succeeded: nothing to retry")
    new_id = make_job_id(name or f"{spec.name}-retry")
    staging = spool.inbox / f".{new_id}"
    staging.mkdir(parents=True)
    try:
        shutil.copyfile(find_job_file(old.root), staging / "job.yaml")
        shutil.copytree(old.code, staging / "code", symlinks=True)
        origin = json.loads(old.origin.read_text(encoding="utf-8")) if old.origin.exists() else {}
        origin["name"] = name or f"{spec.name}-retry"
        write_atomic(staging / "origin.json", json.dumps(origin, indent=1).encode())
        write_atomic(staging / RETRY_FILE, RetryPlan(job_id, total, run).encode())
        fsync_tree(staging)
        if not move_verified(staging, spool.inbox / new_id):
            raise OSError(f"could not move {staging} into the inbox")
        fsync_dir(spool.inbox)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return new_id, len(run)


def _total_mbs(layout: JobLayout, spec: JobSpec) -> int:
    """Mini-batches of a job: from its summary, else by planning its input again."""
    try:
        total = json.loads(layout.status.read_bytes()).get("total_mbs")
    except (OSError, ValueError):
        total = None
    if isinstance(total, int):
        return total
    return sum(1 for _ in plan_mini_batches(spec))
