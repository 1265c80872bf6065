"""``prsctl submit`` refuses a job folder the leader would refuse, naming the setting.

The leader resolves a job's relative inputs against the folder it was submitted from
and refuses that folder when it lies outside the spool's allowed roots. Checked at
submit, the same rule gives the user their own path and the setting to change
(``PRSD_ALLOWED_ROOTS`` in the daemons' settings file) at once, instead of a failed job
blaming a file the user never wrote.
"""

from __future__ import annotations

import os
from pathlib import Path

from prsd.errors import PrsdError
from prsd.jobspec.paths import ROOTS_ENV, Roots
from prsd.settings import env_file, setting


class OutsideAllowedRoots(PrsdError):
    """The job folder lies outside every allowed root of the spool."""


def check_job_folder(job_dir: Path) -> None:
    """Refuse ``job_dir`` when allowed roots are configured and none holds it.

    Roots found only in the settings file are also put in this process's environment,
    so the spec check of ``submit`` applies them to absolute inputs as the leader will.

    Raises:
        OutsideAllowedRoots: with the folder, the roots and where they are set.
    """
    found = setting(ROOTS_ENV)
    if found is None:
        return
    os.environ[ROOTS_ENV] = found.value
    roots = Roots.of([Path(f) for f in found.value.split(":") if f.strip()])
    folder = Path(os.path.abspath(job_dir))
    if roots.allows(folder):
        return
    raise OutsideAllowedRoots(
        f"{folder} is outside the spool's allowed roots ({roots.listed()}, from {found.source}): "
        f"the leader would refuse the job. Move the job folder under one of them, or ask the "
        f"administrator to add its folder to {ROOTS_ENV} in {env_file()}"
    )


def explain(exc: PrsdError) -> PrsdError:
    """A spec refusal for a path outside the allowed roots, with where the roots are set."""
    found = setting(ROOTS_ENV)
    if found is None or "outside the allowed roots" not in str(exc):
        return exc
    return OutsideAllowedRoots(
        f"{exc.one_line()}; the roots are {ROOTS_ENV} in {env_file()} (ask the administrator "
        f"to add the folder, or move the data under one of them)"
    )
