"""Before a job is submitted on the node that will build it: can its python pin be met?

Invariant: :func:`check_pin` says why no interpreter of this node can build the job's
environment (the words of :func:`prsd.envs.interp.choose`), or nothing: nothing is
pinned, a conda-family tool obtains the interpreter itself, the pin is met, or the job
(``python_mismatch: warn``) or node allows the nearest newer one. When the pin is met
by another interpreter than it names (another patch level of its minor, or a newer
minor allowed by ``warn``), it returns ``choose``'s note naming both versions, for
``prsd run`` to say at submission. ``prsd run`` is
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


def check_pin(
    build_environment: dict[str, Any], spool: Path, settings: EnvSettings
) -> tuple[str | None, str]:
    """(why this node cannot meet the job's python pin, or None; the note to say when it
    is met by another version, or "") (see the module doc)."""
    if settings.conda:
        return None, ""
    try:
        spec = resolve(build_environment, spool)
    except EnvError:
        return None, ""
    if spec is None or spec.python is None:
        return None, ""
    mismatch = str(build_environment.get("python_mismatch") or settings.mismatch)
    try:
        _chosen, note = choose(spec.python, find_interpreters(settings.pythons), mismatch)
    except EnvError as exc:
        return str(exc), ""
    return None, note


def pin_key(build_environment: dict[str, Any]) -> str:
    """The job key that named the environment (for the error's location)."""
    for key in ("conda_file", "requirements"):
        if key in build_environment:
            return f"task.environment.{key}"
    return "task.environment"
