"""The job boundary of the leader: one job's fault ends that job, never the daemon.

Invariant: an exception raised while the leader serves one job (its step, its
take-over, its intake) is caught here and ends in one of two ways:

- a storage fault (:func:`prsd.storage.faults.storage_fault`): the job's driver is
  dropped and the job is resumed from the spool, after a backoff, by the take-over
  path (the same code that resumes a job after a leader died), so nothing half done
  in memory is trusted;
- anything else: the job ends Failed with a one-line reason in its
  ``logs/job_result.txt``, ``state/final.json`` and ``state/status.json``, written as
  far as the job's folder still allows, and ``active/<job>`` is removed so that no
  leader, restarted or standby, meets the same fault again.

Errors: :func:`end_broken_job` never raises for a missing or unwritable job folder;
it logs what it could not write.
"""

from __future__ import annotations

import os
import traceback
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from prsd.errors import ExitCode, PrsdError
from prsd.jobspec import JobSpec
from prsd.leader.faultfile import job_log, written_fault
from prsd.leader.finish import FinalState
from prsd.leader.privatestatus import job_gid, write_final, write_status
from prsd.logconfig import get_logger
from prsd.logline import one_line
from prsd.storage.atomic import write_atomic
from prsd.storage.readsafe import read_small
from prsd.wire.status import SCHEMA_VERSION

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from prsd.leader.job import JobDriver
    from prsd.storage.layout import JobLayout, SpoolLayout

log = get_logger("prsd.leader")


def fault_reason(exc: BaseException, layout: JobLayout | None = None) -> str:
    """One line naming what went wrong and where, for job_result.txt."""
    if isinstance(exc, PrsdError):
        return exc.one_line()
    missing = _missing_in_job(exc, layout)
    if missing is not None:
        return (
            f"the job's folder changed while it ran: {missing} is missing (was the job "
            "folder, or a folder in it such as state/, moved or deleted?)"
        )
    where = ""
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        last = frames[-1]
        where = f" (in {os.path.basename(last.filename)}:{last.lineno})"
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"system error while serving the job: {type(exc).__name__}: {text}{where}"


def _missing_in_job(exc: BaseException, layout: JobLayout | None) -> str | None:
    """The job-relative path of a FileNotFoundError inside the job's folder, else None."""
    if layout is None or not isinstance(exc, FileNotFoundError) or not exc.filename:
        return None
    path = os.path.abspath(os.fsdecode(exc.filename))
    root = os.path.abspath(layout.root)
    if not layout.root.is_dir():
        return f"jobs/{layout.job_id}/"
    if not path.startswith(root + os.sep):
        return None
    rel = os.path.relpath(path, root)
    head = rel.split(os.sep)[0]
    return f"jobs/{layout.job_id}/{head}/" if not (layout.root / head).exists() else rel


def end_broken_job(spool: SpoolLayout, layout: JobLayout, reason: str) -> FinalState:
    """Fail a job whose driver cannot go on (or never started), as far as possible."""
    final = FinalState(
        "Failed", reason, int(ExitCode.JOB_FAILED), "", reason, datetime.now(UTC).isoformat()
    )
    text = f"Failed\nReason: {reason}\nLook first: logs/sys/master_role.txt\n"
    status = {
        "schema": SCHEMA_VERSION,
        "job_id": layout.job_id,
        "state": "Failed",
        "reason": reason,
        "updated_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    tree = layout.log_tree
    _write_best_effort(layout, tree.job_result, text.encode())
    if not tree.job_error.exists():  # the driver's own, when it got that far
        where = written_fault(layout.logs) or job_log(layout.logs)
        said = f"{one_line(reason)}\nFull text: {where}\n".encode()
        for path in (tree.job_error, tree.user_error):
            _write_best_effort(layout, path, said)
    # The final state last: whoever sees it ended finds every file that says why.
    gid = job_gid(layout)
    _write_best_effort(layout, layout.status, lambda: write_status(layout, status, gid))
    _write_best_effort(layout, layout.final, lambda: write_final(layout, final.to_json(), gid))
    (spool.active / layout.job_id).unlink(missing_ok=True)
    log.error("job failed by a fault", job_id=layout.job_id, reason=reason)
    return final


def _write_best_effort(layout: JobLayout, path: Path, data: bytes | Callable[[], None]) -> None:
    """Write one end-of-job file (``data``, or a call that writes it); a job folder
    that is gone is not created again."""
    if not layout.root.is_dir():
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if callable(data):
            data()
        else:
            write_atomic(path, data)
    except OSError as exc:
        log.error(
            "cannot write the end of a broken job",
            job_id=layout.job_id,
            path=str(path),
            error=str(exc),
        )


MAX_STATE_BYTES = 64 * 1024 * 1024  # spec.json / final.json a new leader resumes from


def load_spec(layout: JobLayout) -> JobSpec:
    """The job's recorded spec.

    Raises:
        OSError: it cannot be read (storage faults are waited out by the caller).
        PrsdError: it is not a job spec (garbage, ``{}``, a newer schema).
    """
    # O_NOFOLLOW, a regular file of the daemons' own: a planted spec is never believed.
    text = read_small(layout.spec, MAX_STATE_BYTES, daemon_owned=True)
    try:
        return JobSpec.from_json(text.decode("utf-8"))
    except PrsdError:
        raise
    except Exception as exc:  # whatever a damaged file makes the decoder raise
        raise PrsdError(
            f"jobs/{layout.job_id}/spec.json is not a job spec ({type(exc).__name__}: "
            f"{' '.join(str(exc).split())[:200]}); submit the job again"
        ) from exc


def abandon_quietly(driver: JobDriver) -> None:
    try:
        driver.abandon()
    except Exception as exc:  # noqa: BLE001 - closing logs on a broken spool: nothing to do
        log.warning("abandoning a job's driver failed", job_id=driver.job_id, error=str(exc))
