"""``prsd run``'s check that this node can build the job's environment at all.

Promise: :func:`refuse_unbuildable` raises before anything is written when the job's
python pin is one no interpreter of this node meets (``prsd run`` is the node that
builds; :mod:`prsd.envs.precheck`), so the user hears it at submission, not after a
build; a pin this node meets with another version (``python=3.7.6`` built on 3.7.16)
is said on stderr as a note naming both. Nothing is checked for a job that names its
own ``python`` or builds nothing.

Errors: :class:`~prsd.errors.JobSpecError` at the environment's key, with the pin and
the interpreters found; :class:`~prsd.errors.PrsdError` for node settings that do
not read.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from prsd.errors import JobSpecError, PrsdError
from prsd.jobspec.load import find_job_file

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.jobspec import JobSpec


def refuse_unbuildable(
    spool: Path, job_dir: Path, spec: JobSpec, *, quiet: bool = False, where: str = ""
) -> None:
    """Raise when this node cannot meet the job's python pin; say how it meets it when
    not exactly (nothing said with ``quiet``), after ``where`` (default: the job file
    and the environment's key) (see the module doc)."""
    if spec.python is not None or not spec.build_environment:
        return  # before the imports: a job that builds nothing loads no build code
    from prsd.envs.precheck import check_pin, pin_key
    from prsd.envs.settings import EnvSettings
    from prsd.envs.spec import EnvError
    from prsd.jobspec.said import ENVIRONMENT, JobNote, stderr_text

    try:
        settings = EnvSettings.from_env()
    except EnvError as exc:
        raise PrsdError(str(exc)) from None
    why, note = check_pin(spec.build_environment, spool, settings)
    job_file = job_dir if job_dir.is_file() else find_job_file(job_dir)
    if why is not None:
        raise JobSpecError(pin_key(spec.build_environment), str(job_file), why)
    if note and not quiet:
        where = where or f"{job_file}: {pin_key(spec.build_environment)}"
        said = JobNote(ENVIRONMENT, f"{where}: {note}")
        sys.stderr.write(stderr_text("prsd", [said.line()]))
        sys.stderr.flush()
