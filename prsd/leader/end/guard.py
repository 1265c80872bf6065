"""The job boundary of the leader: one job's fault ends that job, never the daemon.

Invariant: an exception raised while the leader serves one job (its step, its
take-over, its intake) is caught here and ends in one of two ways:

- a storage fault (:func:`prsd.spool.faults.storage_fault`): the job's driver is
  dropped and the job is resumed from the spool, after a backoff, by the take-over
  path (the same code that resumes a job after a leader died), so nothing half done
  in memory is trusted;
- anything else: the job ends Failed with a one-line reason in its
  ``logs/job_result.txt``, ``state/status.json`` and ``state/final.json`` (in that
  order, the final record last: :meth:`prsd.spool.jobfolder.JobFolder.end`), written
  as far as the job's folder still allows, and ``active/<job>`` is removed so that no
  leader, restarted or standby, meets the same fault again.

Errors: :func:`end_broken_job` never raises for a missing or unwritable job folder;
it logs what it could not write.
"""

from __future__ import annotations

import os
import traceback
from typing import TYPE_CHECKING

from prsd.errors import PrsdError
from prsd.jobspec import JobSpec
from prsd.leader.end.faultfile import job_log, written_fault
from prsd.leader.end.privatestatus import GRANT
from prsd.logconfig import get_logger
from prsd.logline import one_line
from prsd.spool.endrecords import ended_status, final_record
from prsd.spool.jobfolder import JobFolder
from prsd.spool.specfile import read_spec
from prsd.spool.states import JobState

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.leader.run.job import JobDriver
    from prsd.spool.finalrecord import FinalState
    from prsd.spool.jobfolder import JobFiles
    from prsd.spool.layout import JobLayout, SpoolLayout

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
    return end_broken(JobFolder(spool, layout.job_id, grant=GRANT), reason)


def end_broken(folder: JobFiles, reason: str) -> FinalState:
    """Fail the job in ``folder``: its result, its error texts unless its driver wrote
    them, its status, its final record last (never raises for a file not written)."""
    layout = folder.layout
    final = final_record(JobState.FAILED, reason, root_cause=reason)
    text = f"Failed\nReason: {reason}\nLook first: logs/sys/master_role.txt\n"
    tree = layout.log_tree
    texts = [(tree.job_result, text.encode())]
    if not folder.exists(tree.job_error):  # the driver's own, when it got that far
        where = written_fault(layout.logs) or job_log(layout.logs)
        said = f"{one_line(reason)}\nFull text: {where}\n".encode()
        texts += [(tree.job_error, said), (tree.user_error, said)]
    folder.end(
        final,
        ended_status(layout.job_id, final),
        texts,
        on_error=lambda path, exc: _not_written(layout, path, exc),
    )
    log.error("job failed by a fault", job_id=layout.job_id, reason=reason)
    return final


def _not_written(layout: JobLayout, path: Path, exc: OSError) -> None:
    """Log an end-of-job file that could not be written (a job folder that is gone:
    once, for the job's final record)."""
    if isinstance(exc, FileNotFoundError) and path != layout.final:
        return
    log.error(
        "cannot write the end of a broken job",
        job_id=layout.job_id,
        path=str(path),
        error=str(exc),
    )


MAX_STATE_BYTES = 64 * 1024 * 1024  # final.json a new leader resumes from


def load_spec(layout: JobLayout) -> JobSpec:
    """The job's recorded spec.

    Raises:
        OSError: it cannot be read (storage faults are waited out by the caller).
        PrsdError: it is not a job spec (garbage, ``{}``, a newer schema).
    """
    # O_NOFOLLOW, a regular file of the daemons' own: a planted spec is never believed.
    text = read_spec(layout, daemon_owned=True)
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
