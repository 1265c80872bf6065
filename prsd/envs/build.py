"""Building one environment into a folder: uv (a venv) or a conda-family tool.

Invariant: every command's output goes to the build log as it is printed; a command
that fails or runs past the time left raises :class:`BuildFailed` whose message is
the tool's own first error line (:mod:`prsd.envs.firstline`). uv gets the node's
pip index settings (:func:`prsd.envs.commands.pip_index_env`) and its own cache
beside the environments; conda-only packages installed from PyPI are said in the log. A root agent installs wheels only: building
a source package would run the package's own code as root.

Errors: :class:`BuildFailed` (one line); OSError when the tool cannot be started.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from typing import TYPE_CHECKING, TextIO

from prsd.envs import commands
from prsd.envs.firstline import first_error_line
from prsd.envs.spec import EnvError, EnvSpec

if TYPE_CHECKING:
    from pathlib import Path


class BuildFailed(EnvError):
    """A build command failed; the message is the tool's first error line."""


FULL_BELOW_BYTES = 16 * 1024 * 1024


def disk_note(free_bytes: int, where: str) -> str:
    """What to add to a failed build's message when the disk it wrote to is (nearly) full:
    a tool's error can lose the ``No space left on device`` of its cause."""
    if free_bytes >= FULL_BELOW_BYTES:
        return ""
    return f" (the disk holding {where} is full: {free_bytes // 1024} KiB free)"


def with_disk_note(exc: BuildFailed, where: Path) -> BuildFailed:
    """``exc`` with :func:`disk_note` added when ``where``'s disk is nearly full."""
    try:
        free = shutil.disk_usage(where).free
    except OSError:
        return exc
    note = disk_note(free, str(where))
    return BuildFailed(f"{exc}{note}") if note else exc


def uv_binary() -> str:
    """The uv binary shipped by the ``uv`` package prsd depends on.

    Raises:
        EnvError: the package or its binary is missing (prsd installed without it).
    """
    try:
        import uv

        return str(uv.find_uv_bin())
    except (ImportError, FileNotFoundError) as exc:
        raise EnvError(f"uv is not installed with prsd ({exc}): pip install uv") from None


def build_with_uv(
    spec: EnvSpec, interpreter: str, prefix: Path, log: TextIO, *, cache: Path, timeout_s: float
) -> None:
    uv = uv_binary()
    env = dict(os.environ)
    configs = [p.read_text() for p in commands.pip_config_files(env) if p.is_file()]
    env.update(commands.pip_index_env(env, configs))
    env["UV_CACHE_DIR"] = str(cache)
    env.pop("VIRTUAL_ENV", None)
    deadline = time.monotonic() + timeout_s
    run_logged(commands.uv_venv(uv, interpreter, str(prefix)), log, env, deadline)
    log.writelines(
        f"conda package {line} is installed from PyPI (no conda tool on this node)\n"
        for line in spec.from_conda
    )
    if spec.pip:
        reqs = prefix / ".prsd-requirements.txt"
        reqs.write_text("".join(f"{line}\n" for line in spec.pip))
        cmd = commands.uv_install(uv, str(prefix), str(reqs), wheels_only=os.geteuid() == 0)
        run_logged(cmd, log, env, deadline)


def build_with_conda(
    tool: str, spec: EnvSpec, prefix: Path, log: TextIO, *, timeout_s: float
) -> None:
    """The job's conda file as written, created at ``prefix`` (its final place)."""
    env_file = prefix.parent / f".{prefix.name}.environment.yml"
    env_file.write_text(spec.text)
    try:
        cmd = commands.conda_create(tool, str(prefix), str(env_file))
        run_logged(cmd, log, dict(os.environ), time.monotonic() + timeout_s)
    finally:
        env_file.unlink(missing_ok=True)


def run_logged(cmd: list[str], log: TextIO, env: dict[str, str], deadline: float) -> None:
    """Run ``cmd`` with its output into ``log``.

    Raises:
        BuildFailed: a non-zero exit (the tool's first error line), or the time ran out.
    """
    log.write("$ " + " ".join(cmd) + "\n")
    log.flush()
    left = deadline - time.monotonic()
    if not os.access(cmd[0], os.X_OK):
        raise BuildFailed(f"cannot run {cmd[0]}: not an executable file")
    try:
        done = subprocess.run(
            cmd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=max(left, 1.0),
            check=False,
            umask=0o022,  # readable by the job owners the workers run as
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.output if isinstance(exc.output, str) else ""
        log.write(out)
        raise BuildFailed(f"the build ran past its time limit ({' '.join(cmd[:3])} ...)") from None
    output = (done.stdout or "") + (done.stderr or "")
    log.write(output)
    log.flush()
    if done.returncode != 0:
        raise BuildFailed(first_error_line(output))
