"""Before a job is submitted on the node that will build it: can its python pin be met?

Invariant: :func:`unmet_pin` says why no interpreter of this node can build the job's
environment (the words of :func:`prsd.envs.interp.choose`), or returns None: nothing
is pinned, a conda-family tool obtains the interpreter itself, the pin is met, or the
job (``python_mismatch: warn``) or node allows the nearest newer one. ``prsd run`` is
the node that builds, so it refuses such a job at submission instead of building
nothing minutes later; daemons' clients cannot see the nodes' interpreters, and each
node says so when the build starts, before anything is installed.

Errors: none raised; a file that does not resolve is left to the build, which says why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prsd.envs.interp import choose, find_interpreters
from prsd.envs.node import resolve
from prsd.envs.spec import EnvError

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.envs.settings import EnvSettings


def unmet_pin(build_environment: dict[str, Any], spool: Path, settings: EnvSettings) -> str | None:
    """Why this node cannot meet the job's python pin, or None (see the module doc)."""
    if settings.conda:
        return None
    try:
        spec = resolve(build_environment, spool)
    except EnvError:
        return None
    if spec is None or spec.python is None:
        return None
    mismatch = str(build_environment.get("python_mismatch") or settings.mismatch)
    try:
        choose(spec.python, find_interpreters(settings.pythons), mismatch)
    except EnvError as exc:
        return str(exc)
    return None


def pin_key(build_environment: dict[str, Any]) -> str:
    """The job key that named the environment (for the error's location)."""
    for key in ("conda_file", "requirements"):
        if key in build_environment:
            return f"task.environment.{key}"
    return "task.environment"
