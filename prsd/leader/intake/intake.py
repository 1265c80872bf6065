"""Taking job folders in from ``inbox/``: the id, the seal, the spec, and a bad job's failure.

A folder in ``inbox/`` is complete when it holds ``job.yaml`` (or ``job.yml``):
``prsctl submit`` copies under a dot name and renames, and a folder written in place
by hand writes the job file last. Anything else in the inbox (a symlink, a file) is
removed without being followed, and the leader's log says why.

The leader gives the id (prsd/spool/jobid.py: a submitter's proposal is kept only
when it is fresh), moves the folder in with one rename (of several leaders exactly
one takes a job in), then seals it (prsd/spool/jobroot.py): the owner is recorded
in ``owner.json``, ``jobs/<id>/`` becomes the daemons', and names the daemons reserve
that the submitter left there are moved aside into ``.planted-<hex>/`` before
anything is written, failing the job. A job whose spec cannot be loaded ends at once
as Failed with the loader's one-line error in ``job_result.txt``; it never stops the
leader. The spec is loaded with the job owner's ids (prsd/leader/intake/specowner.py): at
intake root reads only the spool's own files, never a path of the user's side.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from prsd.asowner.side import owner_side
from prsd.errors import InputError, JobSpecError, PrsdError
from prsd.jobspec.load import JOB_FILES
from prsd.leader.end.privatestatus import GRANT
from prsd.leader.intake.inboxsweep import decodable, shown
from prsd.leader.intake.readme import write_job_notes, write_readme
from prsd.leader.intake.specowner import load_as_owner
from prsd.logconfig import get_logger
from prsd.retryplan.retryfiles import adopt_retry_files
from prsd.spool.atomic import move_verified, write_atomic
from prsd.spool.badrecord import BadRecord
from prsd.spool.endrecords import ended_status, final_record
from prsd.spool.jobfolder import JobFolder
from prsd.spool.jobid import (
    assign_job_id,
    base_name,
    release_job_id,
    settle_job_id,
    settled_owner,
)
from prsd.spool.jobowner import JobOwner, read_job_owner, user_name, write_job_owner
from prsd.spool.jobroot import (
    ROOT_MODE,
    SPEC_MODE,
    Sealed,
    SealError,
    make_job_folders,
    make_private,
    only_cancel_inside,
    planted_names,
    restrict_to_job,
    seal_job_root,
)
from prsd.spool.layout import JobLayout
from prsd.spool.listing import scan
from prsd.spool.originrecord import read_origin_record
from prsd.spool.readsafe import UntrustedFile
from prsd.spool.states import JobState

if TYPE_CHECKING:
    from prsd.jobspec import JobSpec
    from prsd.spool.finalrecord import FinalState
    from prsd.spool.layout import SpoolLayout

log = get_logger("prsd.leader")

_REPORTED: set[tuple[str, int]] = set()  # strays this leader could not remove, already logged


class PlantedEntries(PrsdError):
    """The submitted folder held names the daemons reserve for their own files."""


class OwnerUnknown(PrsdError):
    """A job sealed by a leader that died before recording its owner."""


def ready_in_inbox(spool: SpoolLayout, others: list[tuple[str, int]] | None = None) -> list[str]:
    """Names of complete job folders waiting in the inbox; strays there are removed.

    A symlink, file or other non-folder under a name without a leading dot is never
    a job: it is unlinked (the link itself, never its target) and the leader's log
    says why, so ``prsctl status`` never shows it as Queued. A folder whose name is
    not UTF-8 is never ready: it goes, with the incomplete folders, into ``others``
    as (name, inode) for prsd/leader/intake/inboxsweep.py.
    """
    try:
        entries = list(scan(spool.inbox))
    except FileNotFoundError:
        return []
    ready = []
    for e in entries:
        if e.name.startswith("."):
            continue
        if not e.is_dir(follow_symlinks=False):
            _remove_stray(spool, e.name, "a symlink" if e.is_symlink() else "not a folder")
            continue
        if _has_job_file(spool, e.name) and decodable(e.name):
            ready.append(e.name)
        elif others is not None:
            others.append((e.name, e.inode()))
    return sorted(ready)


def _has_job_file(spool: SpoolLayout, name: str) -> bool:
    """A ``job.yaml`` (or ``job.yml``) with content: an empty one is a folder still being
    copied by hand, or one whose copy stopped on a full disk. It waits in the inbox
    (Queued) rather than fail as "job.yaml is empty"; said once per folder."""
    for file_name in ("job.yaml", "job.yml"):
        try:
            info = os.lstat(spool.queued(name) / file_name)
        except OSError:
            continue
        if info.st_size > 0 or not stat.S_ISREG(info.st_mode):
            return True
        if (name, info.st_ino) not in _REPORTED:
            _REPORTED.add((name, info.st_ino))
            log.warning(
                "inbox folder not taken in yet: its job file is empty (still being copied, "
                "or the copy stopped on a full disk: copy it again or use prsctl submit)",
                name=name,
            )
    return False


def _remove_stray(spool: SpoolLayout, name: str, what: str) -> None:
    path = spool.queued(name)
    try:
        info = os.lstat(path)
    except OSError:
        return  # gone already
    if stat.S_ISDIR(info.st_mode):
        return  # replaced by a folder since the listing: a submission after all
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        if (name, info.st_ino) not in _REPORTED:  # once, not at every round
            _REPORTED.add((name, info.st_ino))
            log.warning("cannot remove a stray inbox entry", name=shown(name), error=exc.strerror)
        return
    log.warning(
        "refused an inbox entry that is not a job folder; it was removed (never followed)",
        name=shown(name),
        kind=what,
        uid=info.st_uid,
    )


def take_in(spool: SpoolLayout, name: str) -> JobLayout | None:
    """Move ``inbox/<name>`` to ``jobs/<id>`` under an id the leader reserved.

    Returns None if another leader took the folder first.

    Raises:
        OSError: the id registry cannot be written.
    """
    job_id, held = assign_job_id(spool, name, _origin_name(spool.queued(name)) or base_name(name))
    layout = spool.job(job_id)
    if not move_verified(spool.queued(name), layout.root):
        release_job_id(spool, job_id, held)  # another leader took it, or it cannot move
        return None
    settle_given(spool, job_id, owner_before_seal(layout))
    if job_id != name:
        log.info("inbox folder given a fresh job id", inbox_name=name, job_id=job_id)
    return layout


def owner_before_seal(layout: JobLayout) -> tuple[int, int] | None:
    """The (uid, gid) of a folder just moved into ``jobs/`` (which only the daemons can
    rename in, so the folder at that name is the one moved); None if it is not one."""
    try:
        info = os.lstat(layout.root)
    except OSError:
        return None
    return (info.st_uid, info.st_gid) if stat.S_ISDIR(info.st_mode) else None


def settle_given(spool: SpoolLayout, job_id: str, owner: tuple[int, int] | None = None) -> None:
    """Mark the id of a job whose folder moved in as given (never raises: while
    ``jobs/<id>`` exists the id is safe anyway, and removal marks it again)."""
    try:
        settle_job_id(spool, job_id, owner)
    except OSError as exc:
        log.warning("cannot mark a job id given", job_id=job_id, error=exc.strerror)


def load_taken_job(layout: JobLayout) -> JobSpec:
    """Seal a job just taken in, record its owner, load and record its spec (in this
    thread: the leader's round does the three steps apart, see prsd/leader/intake/loads.py).

    Raises:
        SealError: the folder could not be given to the daemons (nothing was written).
        PlantedEntries: the submitted folder held reserved names (moved aside).
        JobSpecError: the spec cannot be run as written.
    """
    owner = seal_taken_job(layout)
    return record_spec(layout, owner, load_as_owner(layout))


def seal_taken_job(layout: JobLayout) -> JobOwner:
    """Seal a job just taken in and record its owner: everything before its spec is
    loaded (the spool's own files only, quick); the owner recorded.

    Raises:
        SealError, PlantedEntries: as :func:`load_taken_job`.
    """
    sealed = seal_job_root(layout.root)
    planted = planted_names(sealed.entries)
    cancel = "state" in planted and only_cancel_inside(layout.state)
    aside = _set_aside(layout, planted) if planted else ""
    write_job_owner(layout, sealed.owner)
    make_private(layout.root, sealed)
    make_job_folders(layout.root, sealed.owner)
    adopt_retry_files(layout, sealed.owner)
    if cancel:  # `prsctl cancel` of a job still in the inbox
        planted.remove("state")
        write_atomic(layout.cancel, b"prsctl cancel (queued)\n")
    if planted:
        kinds = {e.name: e.kind for e in sealed.entries}
        held = ", ".join(f"{name} ({kinds[name]})" for name in planted)
        raise PlantedEntries(
            f"the submitted folder holds {held}: names prsd reserves for its own files "
            f"in a job; they were moved aside to {aside}/ and not used. Rename them in "
            "your job folder and submit it again"
        )
    return sealed.owner


def resume_taken_job(layout: JobLayout) -> JobSpec:
    """Intake again for a job whose leader died while taking it in (no ``spec.json``).

    Before the folder was sealed it is still the owner's: the whole intake runs. Once
    the owner is recorded (after any planted names were set aside) the rest is done
    again. Sealed but with no owner record, the owner cannot be known (the folder is
    the daemons' now): the job fails rather than run as anyone else.

    Raises:
        SealError, PlantedEntries, JobSpecError: as :func:`load_taken_job`.
        OwnerUnknown: sealed, and no owner record.
    """
    owner = reseal_taken_job(layout)
    return record_spec(layout, owner, load_as_owner(layout))


def reseal_taken_job(layout: JobLayout) -> JobOwner:
    """:func:`resume_taken_job` up to loading the spec; the owner recorded.

    Raises:
        SealError, PlantedEntries, OwnerUnknown: as :func:`resume_taken_job`.
    """
    if not os.path.lexists(layout.owner_record):
        info = os.lstat(layout.root)
        if info.st_uid != os.geteuid() or stat.S_IMODE(info.st_mode) != ROOT_MODE:
            return seal_taken_job(layout)  # not sealed yet: the owner's folder as submitted
        before = settled_owner(layout.spool, layout.job_id)
        if before is None:
            raise OwnerUnknown(
                "the leader stopped while taking the job in, before its owner was "
                "recorded: submit the job again"
            )
        write_job_owner(layout, JobOwner(before[0], before[1], user_name(before[0])))
    owner = read_job_owner(layout)
    sealed = Sealed(owner, seal_job_root(layout.root).entries)
    make_private(layout.root, sealed)
    make_job_folders(layout.root, owner)
    adopt_retry_files(layout, owner)
    return owner


def record_spec(layout: JobLayout, owner: JobOwner, spec: JobSpec) -> JobSpec:
    """Record the loaded ``spec`` of a sealed job (``spec.json``, its folders, its notes);
    the spec as recorded (named as ``prsctl submit --name`` said).

    Raises:
        InputError: an output folder cannot be made on the owner's side.
        OSError: the spool cannot be written.
    """
    override = _origin_name(layout.root)
    if override:
        spec = dataclasses.replace(spec, name=override)
    _make_output_folders(layout, owner, spec)
    for d in layout.task_dirs():
        d.mkdir(parents=True, exist_ok=True)
    write_atomic(layout.spec, spec.to_json().encode(), mode=SPEC_MODE)
    restrict_to_job(layout.spec, owner)
    write_readme(layout)
    write_job_notes(layout.logs, spec)
    return spec


def _make_output_folders(layout: JobLayout, owner: JobOwner, spec: JobSpec) -> None:
    """Make the job's folder outputs that lie under its ``outputs/`` (a pipeline step's
    named outputs: Azure mounts them before the script runs) with the owner's ids, so
    the kernel decides what may be made in the owner's folder, never root.

    Raises:
        InputError: a folder cannot be made (a link on the way, permissions), or the
            owner side failed.
    """
    outputs = layout.outputs
    wanted = [Path(p) for p in spec.output_folders]
    parts = [p.relative_to(outputs).parts for p in wanted if p.is_relative_to(outputs)]
    parts = [p for p in parts if p]
    if not parts:
        return
    side = owner_side(owner.uid, owner.gid)
    try:
        for folder in parts:
            side.make_folder(str(outputs), folder)
    except PrsdError as exc:
        raise InputError(f"the job's output folder cannot be made: {exc.one_line()}") from None
    finally:
        side.close()


def _set_aside(layout: JobLayout, names: list[str]) -> str:
    """Move planted names into a fresh ``.planted-<hex>/`` (the entries, never followed).

    Raises:
        SealError: one could not be moved; nothing more may be written in the job.
    """
    folder = layout.root / f".planted-{secrets.token_hex(4)}"
    os.mkdir(folder, 0o700)
    for name in names:
        if not move_verified(layout.root / name, folder / name):
            raise SealError(f"cannot move the planted {name} aside in {layout.root}")
    return folder.name


def fail_intake(layout: JobLayout, error: PrsdError) -> FinalState:
    """End a job that could not be taken in, saying exactly what to fix.

    A folder that could not be sealed is not written to at all (its owner could
    still replace what the leader would write through): the reason goes to the
    leader's log only.
    """
    reason = error.one_line()
    if isinstance(error, SealError):
        log.error(
            "job folder not sealed; nothing written in it", job_id=layout.job_id, error=reason
        )
        return final_record(JobState.FAILED, reason)
    if isinstance(error, JobSpecError) and not error.location:
        reason = f"{_job_file_name(layout)}: {reason}"
    final = final_record(JobState.FAILED, reason)
    layout.logs.mkdir(parents=True, exist_ok=True)
    write_readme(layout)
    text = f"Failed\nReason: {reason}\nThe job was not started: fix the job folder and submit it again.\n"
    JobFolder.of(layout, grant=GRANT).end(
        final, ended_status(layout.job_id, final), [(layout.log_tree.job_result, text.encode())]
    )
    return final


def _job_file_name(layout: JobLayout) -> Path:
    """The job file's path in the spool, for a reason: looked up by name, never followed."""
    for name in JOB_FILES:
        if os.path.lexists(layout.root / name):
            return layout.root / name
    return layout.root / JOB_FILES[0]


def _origin_name(folder: Path) -> str:
    """The ``name`` in ``origin.json`` (``prsctl submit --name``), read without following links."""
    try:
        return read_origin_record(JobLayout(folder, folder.name).origin).name
    except (UntrustedFile, BadRecord):
        return ""
