"""``prsd run``'s check that this node can build the job's environment at all.

Promise: :func:`refuse_unbuildable` raises before anything is written when the job's
python pin is one no interpreter of this node meets (``prsd run`` is the node that
builds; :mod:`prsd.envs.precheck`), so the user hears it at submission, not after a
build. Nothing is checked for a job that names its own ``python`` or builds nothing.

Errors: :class:`~prsd.errors.JobSpecError` at the environment's key, with the pin and
the interpreters found; :class:`~prsd.errors.PrsdError` for node settings that do
not read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prsd.errors import JobSpecError, PrsdError
from prsd.jobspec.load import find_job_file

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.jobspec import JobSpec


def refuse_unbuildable(spool: Path, job_dir: Path, spec: JobSpec) -> None:
    """Raise when this node cannot meet the job's python pin (see the module doc)."""
    from prsd.envs.precheck import pin_key, unmet_pin
    from prsd.envs.settings import EnvSettings
    from prsd.envs.spec import EnvError

    if spec.python is not None or not spec.build_environment:
        return
    try:
        settings = EnvSettings.from_env()
    except EnvError as exc:
        raise PrsdError(str(exc)) from None
    why = unmet_pin(spec.build_environment, spool, settings)
    if why is not None:
        job_file = job_dir if job_dir.is_file() else find_job_file(job_dir)
        raise JobSpecError(pin_key(spec.build_environment), str(job_file), why)
