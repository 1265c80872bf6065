"""The agent's environment settings, read from its process environment.

Invariant: every setting has a default that works on a node with nothing configured:
the cache in ``/var/cache/prsd/envs`` (root) or ``~/.cache/prsd/envs``, a 50 GB
budget, builds limited to 30 minutes, interpreters found on PATH, a conda-family
tool or container runtime used only when one is found (or named), a python pin
that cannot be met is an error, and packages without a wheel are built from source.

- ``PRSD_ENV_CACHE``: the node-local cache folder (never the shared spool).
- ``PRSD_ENV_CACHE_MAX_GB``: the size budget beyond which unused entries are removed.
- ``PRSD_ENV_BUILD_TIMEOUT``: seconds one build (or the wait for another's) may take.
- ``PRSD_ENV_PYTHONS``: interpreters to offer first, ``:``-separated: paths, glob
  patterns (``/root/.pyenv/versions/*/bin/python``) or folders of interpreters.
- ``PRSD_CONDA``: ``conda``, ``mamba``, ``micromamba`` or a path; ``none``: always uv.
- ``PRSD_CONTAINER_RUNTIME``: ``podman``, ``docker`` or a path; ``none``: no images.
- ``PRSD_PYTHON_MISMATCH``: ``error`` (default) or ``warn``.
- ``PRSD_ENV_SOURCE_BUILDS``: ``yes`` (default): packages without a wheel are built
  from source (as the job's owner); ``no``: wheels only.

Errors: :class:`~prsd.envs.spec.EnvError` for a value that does not read.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from prsd.envs.commands import CONDA_TOOLS, CONTAINER_RUNTIMES
from prsd.envs.interp import MISMATCH_MODES
from prsd.envs.spec import EnvError

if TYPE_CHECKING:
    from collections.abc import Mapping


@dataclass(frozen=True)
class EnvSettings:
    cache: Path
    budget_bytes: int
    build_timeout_s: float
    pythons: str
    conda: str | None
    runtime: str | None
    mismatch: str
    source_builds: bool = True

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> EnvSettings:
        env = os.environ if env is None else env
        default = (
            Path("/var/cache/prsd/envs")
            if os.geteuid() == 0
            else Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "prsd" / "envs"
        )
        mismatch = env.get("PRSD_PYTHON_MISMATCH", "error") or "error"
        if mismatch not in MISMATCH_MODES:
            raise EnvError(f"PRSD_PYTHON_MISMATCH={mismatch!r}: expected error or warn")
        source = (env.get("PRSD_ENV_SOURCE_BUILDS") or "yes").strip().lower()
        if source not in ("yes", "no"):
            raise EnvError(f"PRSD_ENV_SOURCE_BUILDS={source!r}: expected yes or no")
        return cls(
            cache=Path(env.get("PRSD_ENV_CACHE") or default),
            budget_bytes=int(_number(env, "PRSD_ENV_CACHE_MAX_GB", 50.0) * 1e9),
            build_timeout_s=_number(env, "PRSD_ENV_BUILD_TIMEOUT", 1800.0),
            pythons=env.get("PRSD_ENV_PYTHONS", ""),
            conda=_tool(env.get("PRSD_CONDA"), CONDA_TOOLS, env.get("PATH")),
            runtime=_tool(env.get("PRSD_CONTAINER_RUNTIME"), CONTAINER_RUNTIMES, env.get("PATH")),
            mismatch=mismatch,
            source_builds=source == "yes",
        )


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    text = env.get(name)
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise EnvError(f"{name}={text!r} is not a number") from None
    if value <= 0:
        raise EnvError(f"{name}={text!r} must be more than 0")
    return value


def _tool(named: str | None, known: tuple[str, ...], path: str | None) -> str | None:
    """The tool named (a name on PATH or a path), else the first known one on PATH."""
    if named == "none":
        return None
    for name in [named] if named else known:
        found = shutil.which(name, path=path)
        if found:
            return found
    if named:
        raise EnvError(f"{named!r} (named in the agent's settings) is not found or not executable")
    return None


def node_runtime() -> str | None:
    """The container runtime of this node's settings (None: none, or settings unread)."""
    try:
        return EnvSettings.from_env().runtime
    except EnvError:
        return None
