"""``prsctl submit`` refuses a job folder the leader would refuse, naming the setting.

The leader resolves a job's relative inputs against the folder it was submitted from
and refuses that folder when it lies outside the spool's allowed roots. Checked at
submit with the leader's rule and the daemons' settings (:mod:`prsd.settings`), the
refusal gives the user the leader's message and the setting to change
(``PRSD_ALLOWED_ROOTS``, and where it is set) at once, instead of a failed job.
"""

from __future__ import annotations

import os
from pathlib import Path

from prsd.errors import JobSpecError, PrsdError
from prsd.jobspec.paths import ROOTS_ENV, Roots
from prsd.settings import setting


class OutsideAllowedRoots(PrsdError):
    """The job folder lies outside every allowed root of the spool."""


def check_job_folder(job_dir: Path) -> None:
    """Refuse ``job_dir`` when allowed roots are configured and none holds it.

    The leader's rule and message for the folder a job was submitted from (the first
    check of a pipeline's folder too), with where the roots are set.

    Raises:
        OutsideAllowedRoots: with the folder, the roots and where they are set.
    """
    roots = Roots.of([])
    folder = Path(os.path.abspath(job_dir))
    found = roots.problem(folder) if roots.folders else None
    if found is not None:
        raise explain(JobSpecError("job_dir", str(folder), f"{folder} {found}"))


def explain(exc: PrsdError) -> PrsdError:
    """A refusal for a path outside the allowed roots, with where the roots are set."""
    found = setting(ROOTS_ENV)
    if found is None or "outside the allowed roots" not in str(exc):
        return exc
    return OutsideAllowedRoots(
        f"{exc.one_line()}; the roots are {found.source} (ask the administrator to add "
        "the folder, or move the data under one of them)"
    )
