"""Submitting a job folder to a spool (``prsctl submit`` and ``prsd run``).

The folder's spec is loaded first, so a bad spec is refused before anything is
written. Then ``job.yaml``, a snapshot of the code folder and ``origin.json`` (the
folder the user's relative input paths mean) are copied under a random dot name in
``inbox/``; that copy is loaded as the leader's intake will load it (the same code,
the same settings: :func:`check_as_leader`), and renamed into place in one step only
when the leader would take it. Inputs and side inputs are read in place and never
copied: datasets are large.

The folder's name in the inbox is the id the submitter proposes (and prints): a
fresh :func:`make_job_id` never given in this spool. The leader keeps it only if it
is still fresh when the job is taken in (prsd/spool/jobid.py); the staging name
says nothing of it, so nobody can take the name first. The copy is private: the
staging folder is 0700 and the snapshot's top entries give others no rights (the
job's group keeps what the user's umask gives it).
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import shutil
import stat
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from prsd.errors import JobSpecError, PrsdError
from prsd.jobspec import JobSpec
from prsd.jobspec.load import find_job_file, load_job_spec
from prsd.spool.atomic import fsync_dir, fsync_tree, move_verified, write_atomic
from prsd.spool.badrecord import BadRecord
from prsd.spool.codedigest import code_digest
from prsd.spool.finalrecord import read_final_state
from prsd.spool.jobid import ever_given, make_job_id
from prsd.spool.jobowner import OwnerRecordError, owner
from prsd.spool.jobyaml import write_job_yaml
from prsd.spool.layout import JobLayout
from prsd.spool.listing import names, scan
from prsd.spool.originrecord import Origin, read_origin_record, write_origin
from prsd.spool.specfile import read_spec
from prsd.spool.states import JobState
from prsd.wire.fields import RecordError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from prsd.spool.layout import SpoolLayout

MAX_SNAPSHOT_BYTES = 256 * 1024 * 1024
_SKIP_NAMES = {"__pycache__", ".git", ".venv", ".mypy_cache", ".pytest_cache", "node_modules"}


def submit(
    job_dir: Path,
    spool: SpoolLayout,
    *,
    name: str | None = None,
    overrides: Sequence[str] = (),
    check: Callable[[JobSpec], None] | None = None,
) -> tuple[str, JobSpec]:
    """Validate ``job_dir`` and drop it into the spool's inbox; returns (job id, spec).

    ``job_dir`` is a folder with ``job.yaml``, or the job file itself (any name; its
    paths are relative to its folder). ``overrides`` are ``--set KEY=VALUE`` changes,
    applied before the spec is checked; the job file copied is the changed one.
    ``check(spec)``, when given, may refuse the spec before anything is written (``prsd
    run``: an environment this node cannot build).

    Raises:
        JobSpecError: the spec cannot be run as written (nothing was written).
        OSError: the spool is not writable.
    """
    from prsd.jobspec.overrides import apply_overrides, parse_override
    from prsd.jobspec.yamlsafe import read_yaml

    job_dir = job_dir.absolute()
    job_file = job_dir if job_dir.is_file() else None
    if job_file is not None:
        job_dir = job_file.parent
    elif not job_dir.is_dir():
        raise JobSpecError("", str(job_dir), "is neither a job file nor a folder with job.yaml")
    parsed = [parse_override(o) for o in overrides]
    # The leader's rule: the daemons are whoever owns the spool's jobs/ folder.
    daemons = next((d for d in (spool.jobs, spool.root) if d.is_dir()), None)
    daemon_uid = daemons.stat().st_uid if daemons is not None else os.geteuid()
    spec = load_job_spec(
        job_dir,
        spool_job_dir=job_dir,
        owner_uid=os.geteuid(),
        daemon_uid=daemon_uid,
        job_file=job_file,
        overrides=parsed,
    )
    if check is not None:
        check(spec)
    job_id = _fresh_id(spool, name or spec.name)
    staging = _staging(spool)
    staged = JobLayout(staging, job_id)
    try:
        source = job_file or find_job_file(job_dir)
        if parsed:
            data = apply_overrides(read_yaml(source).data, parsed)
            text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
            write_job_yaml(staged, text)
        else:
            shutil.copyfile(source, staged.job_yaml)
        skip = _skip_paths(spec, spool)
        code = Path(spec.code_dir)
        if job_file is not None and code == job_dir:
            copy_named_code(spec, staged.code)
        else:
            snapshot_code(code, staged.code, skip)
        origin = Origin(str(job_dir), name or "", code_digest(staged.code))
        write_origin(staged, origin)
        check_as_leader(staging, spool.job(job_id).root, daemon_uid, (source, job_dir, code))
        _publish(staging, spool, job_id)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return job_id, spec


def check_as_leader(
    staging: Path, job_root: Path, daemon_uid: int, shown: tuple[Path, Path, Path]
) -> None:
    """Load the staged job as the leader's intake will load it, with the same code.

    The leader loads the folder it takes in (``job.yaml``, the code snapshot,
    ``origin.json``) as the job's folder ``job_root`` in the spool, with the daemons'
    settings: so the submitted folder is checked against the allowed roots (and, for a
    job the daemons run for someone else, its owner), and outputs against the names the
    daemons keep, before any job id is printed. ``shown`` (the job file, the job
    folder, the code folder) replaces the staged names in a message.

    Raises:
        JobSpecError: the leader would refuse the job at intake.
    """
    try:
        load_job_spec(
            staging, spool_job_dir=job_root, owner_uid=os.geteuid(), daemon_uid=daemon_uid
        )
    except JobSpecError as exc:
        location = exc.location
        job = JobLayout(staging, staging.name)
        for staged, user in zip((job.job_yaml, job.origin, job.code), shown, strict=True):
            location = location.replace(str(staged), str(user))
        raise JobSpecError(exc.key, location, exc.problem) from None


def _fresh_id(spool: SpoolLayout, name: str) -> str:
    """An id never given in this spool and not waiting in its inbox."""
    while True:
        job_id = make_job_id(name)
        if not ever_given(spool, job_id) and not os.path.lexists(spool.queued(job_id)):
            return job_id


def _staging(spool: SpoolLayout) -> Path:
    """A new private folder in the inbox under a random dot name."""
    staging = spool.inbox / f".submit-{secrets.token_hex(8)}"
    staging.mkdir(mode=0o700, parents=False)
    return staging


def _publish(staging: Path, spool: SpoolLayout, job_id: str) -> None:
    """Take others' rights from the copy's top entries, then rename it into the inbox."""
    for entry in scan(staging):
        if not entry.is_symlink():
            mode = stat.S_IMODE(entry.stat(follow_symlinks=False).st_mode)
            os.chmod(entry.path, mode & ~0o007)
    fsync_tree(staging)  # durable before it is published (docs/spool.md, Durability)
    if not move_verified(staging, spool.queued(job_id)):
        raise OSError(f"could not move {staging} into the inbox")
    fsync_dir(spool.inbox)


def _skip_paths(spec: JobSpec, spool: SpoolLayout) -> set[str]:
    """Paths never copied into the code snapshot: the data and the spool itself."""
    skip = {os.path.realpath(p) for p in spec.input.paths}
    skip.update(os.path.realpath(p) for p in spec.side_inputs.values())
    skip.add(os.path.realpath(spool.root))
    return skip


def copy_named_code(spec: JobSpec, dest: Path) -> None:
    """The code of a job file given by name without ``task.code``: the entry script alone.

    The file's folder may be a home directory; only what the file names is copied
    (the entry script, and ``parallel_run_step.settings.json`` beside it). An entry
    script given as a module name copies the folder as a ``task.code`` would.
    """
    from prsd.jobspec.code import SETTINGS_FILE

    src = Path(spec.code_dir)
    if not spec.entry_script.endswith(".py"):
        snapshot_code(src, dest, set())
        return
    dest.mkdir(parents=True, exist_ok=True)
    for name in (spec.entry_script, SETTINGS_FILE):
        if (src / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src / name, dest / name)


def snapshot_code(src: Path, dest: Path, skip: set[str]) -> int:
    """Copy the code folder (without data, caches, VCS folders); returns bytes copied.

    Raises:
        JobSpecError: the folder is larger than MAX_SNAPSHOT_BYTES without its inputs.
        PermissionError: a folder or file of it cannot be read by the user (named: a
            snapshot silently missing what could not be read would run other code).
    """
    total = 0
    names(src)  # an unreadable code folder is refused here, by name

    def refuse(exc: OSError) -> None:
        raise exc

    for root, dirs, files in os.walk(src, onerror=refuse):
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


def submit_retry(
    spool: SpoolLayout,
    job_id: str,
    *,
    name: str | None = None,
    code_dir: Path | None = None,
    overrides: Sequence[str] = (),
) -> tuple[str, int, str]:
    """A new job running again exactly the inputs job ``job_id`` left without output.

    The earlier job's ``job.yaml`` (with ``overrides``, az ml's ``--set`` syntax,
    applied), code snapshot (or a snapshot of ``code_dir``, a fixed script) and
    ``origin.json`` are copied with a ``retry.json`` and the results to keep (see
    :mod:`prsd.leader.rerun.retryjob`); returns (new job id, mini-batches to run, a summary).

    Raises:
        PrsdError: the job has not ended, is someone else's, or has nothing to retry;
            a bad override or a spec the overrides break (JobSpecError).
        OSError: the spool is not writable.
    """
    from prsd.jobspec.overrides import apply_overrides, parse_override
    from prsd.jobspec.yamlsafe import read_yaml
    from prsd.retryplan.draft import draft_retry  # the leader's own planning, dry run

    old = spool.job(job_id)
    if not old.final.exists():
        raise PrsdError(f"job {job_id} has not ended; retry it once it has")
    _check_may_retry(old, _end_state(old))
    if not old.spec.exists():
        raise PrsdError(f"job {job_id} was refused when it was taken in: submit it anew")
    parsed = [parse_override(o) for o in overrides]
    old_name = JobSpec.from_json(read_spec(old, daemon_owned=False).decode("utf-8")).name
    new_id = _fresh_id(spool, name or f"{old_name}-retry")
    staging = _staging(spool)
    staged = JobLayout(staging, new_id)
    try:
        yaml_text = find_job_file(old.root).read_text(encoding="utf-8")
        if parsed:
            data = apply_overrides(read_yaml(find_job_file(old.root)).data, parsed)
            yaml_text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
        write_job_yaml(staged, yaml_text)
        if code_dir is None:
            shutil.copytree(old.code, staged.code, symlinks=True)
        else:
            snapshot_code(code_dir.absolute(), staged.code, {os.path.realpath(spool.root)})
        origin = dataclasses.replace(_old_origin(old), name=name or "")
        write_origin(staged, origin)
        spec = load_job_spec(staging) if parsed or code_dir is not None else None
        spec = spec or JobSpec.from_json(read_spec(old, daemon_owned=False).decode("utf-8"))
        draft = draft_retry(old, spec, code=code_digest(staged.code), overrides=tuple(overrides))
        write_atomic(staged.retry_kept, "".join(k.to_line() for k in draft.kept).encode())
        write_atomic(staged.retry_plan, draft.plan.encode())
        _publish(staging, spool, new_id)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return new_id, draft.runs, draft.summary


def _old_origin(old: JobLayout) -> Origin:
    """The ended job's ``origin.json`` (an empty one where it has none).

    Raises:
        PrsdError: it is not such a record, or a link.
    """
    if not os.path.lexists(old.origin):
        return Origin()
    try:
        return read_origin_record(old.origin)
    except BadRecord as exc:
        raise PrsdError(f"job {old.job_id}: {exc}; submit it anew") from exc


def _end_state(old: JobLayout) -> str:
    """The state in the ended job's ``final.json`` ("" when it is no final record)."""
    try:
        return read_final_state(old).state
    except RecordError:
        return ""


def _check_may_retry(old: JobLayout, final_state: str) -> None:
    """Refuse a retry of another user's job, or of one with nothing left to run.

    Raises:
        PrsdError: with the reason.
    """
    try:
        found = owner(old)
    except OwnerRecordError as exc:
        raise PrsdError(f"job {old.job_id}: {exc.one_line()}; a retry needs its owner") from exc
    if found.uid != os.geteuid():
        raise PrsdError(f"job {old.job_id} belongs to {found.user}: only {found.user} can retry it")
    if final_state == JobState.COMPLETED:
        raise PrsdError(f"every mini-batch of job {old.job_id} succeeded: nothing to retry")
