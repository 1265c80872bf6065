"""Building one environment into a folder: uv (a venv) or a conda-family tool.

Invariant: every command's output goes to the build log as it is printed, and each
line that starts a new phase (:mod:`prsd.envs.phase`) is passed to ``on_phase``; a
command that fails or runs past the time left raises :class:`BuildFailed` whose
message is the tool's own first error line (:mod:`prsd.envs.firstline`). uv gets the
node's pip index settings (:func:`prsd.envs.commands.pip_index_env`) and its own
cache beside the environments; conda-only packages installed from PyPI are said in
the log. Packages without a wheel are built from source unless the node forbids it
(``PRSD_ENV_SOURCE_BUILDS=no``); a package's build code runs with the job owner's
ids when a root agent builds for another user (:mod:`prsd.envs.ownerbuild`), never
as root for someone else.

Errors: :class:`BuildFailed` (one line); OSError when the tool cannot be started.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from typing import TYPE_CHECKING, TextIO

from prsd.envs import commands, ownerbuild, phase
from prsd.envs.firstline import first_error_line
from prsd.envs.spec import EnvError, EnvSpec

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from prsd.owner import RunAs


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
    spec: EnvSpec,
    interpreter: str,
    prefix: Path,
    log: TextIO,
    *,
    cache: Path,
    timeout_s: float,
    source_builds: bool = True,
    build_as: RunAs | None = None,
    on_phase: Callable[[str], None] = lambda _p: None,
) -> None:
    """A venv on ``interpreter`` at ``prefix`` with the spec's packages.

    ``build_as``: the job's owner, when a root agent builds for another user: the
    install (which may run packages' build code) runs with the owner's ids.
    """
    uv = uv_binary()
    env = dict(os.environ)
    configs = [p.read_text() for p in commands.pip_config_files(env) if p.is_file()]
    env.update(commands.pip_index_env(env, configs))
    env["UV_CACHE_DIR"] = str(cache)
    env["COLUMNS"] = "100000"  # uv wraps its messages at COLUMNS: a reason must stay one line
    env.pop("VIRTUAL_ENV", None)
    deadline = time.monotonic() + timeout_s
    on_phase(phase.CREATING)
    run_logged(commands.uv_venv(uv, interpreter, str(prefix)), log, env, deadline)
    log.writelines(
        f"conda package {line} is installed from PyPI (no conda tool on this node)\n"
        for line in spec.from_conda
    )
    if not spec.pip:
        return
    reqs = prefix / ".prsd-requirements.txt"
    lines = list(spec.pip)
    if spec.constraints:  # pins of Azure's left-out packages: constraints, not installs
        kept = prefix / ".prsd-constraints.txt"
        kept.write_text("".join(f"{line}\n" for line in spec.constraints))
        log.write(
            f"kept as constraints (from Azure's left-out packages): {', '.join(spec.constraints)}\n"
        )
        lines.insert(0, f"-c {kept}")
    reqs.write_text("".join(f"{line}\n" for line in lines))
    cmd = commands.uv_install(uv, str(prefix), str(reqs), wheels_only=not source_builds)
    on_phase(phase.RESOLVING)
    if build_as is None:
        _install(cmd, log, env, deadline, on_phase, None)
        return
    try:
        owner_cache = ownerbuild.owner_cache(cache.parent, build_as)
        ownerbuild.hand_over(prefix, build_as)
    except OSError as exc:
        who = f"the job's owner {build_as.name}"
        raise BuildFailed(f"cannot hand the build folder to {who}: {exc}") from None
    env.update(UV_CACHE_DIR=str(owner_cache), HOME="/", USER=build_as.name, LOGNAME=build_as.name)
    env["UV_LINK_MODE"] = "copy"  # no hard link into the cache: take_back refuses any
    log.write(f"packages installed as the job's owner {build_as.name} (uid {build_as.uid})\n")
    try:
        _install(cmd, log, env, deadline, on_phase, build_as)
    finally:
        try:
            ownerbuild.take_back(prefix)
        except ownerbuild.HardLinked as exc:
            raise BuildFailed(str(exc)) from None


def _install(
    cmd: list[str],
    log: TextIO,
    env: dict[str, str],
    deadline: float,
    on_phase: Callable[[str], None],
    build_as: RunAs | None,
) -> None:
    try:
        run_logged(cmd, log, env, deadline, on_phase=on_phase, build_as=build_as)
    except BuildFailed as exc:
        if "--only-binary" in cmd and "no usable wheels" in str(exc):
            raise BuildFailed(f"{exc} (PRSD_ENV_SOURCE_BUILDS=no on this node)") from None
        raise


def build_with_conda(
    tool: str,
    spec: EnvSpec,
    prefix: Path,
    log: TextIO,
    *,
    timeout_s: float,
    on_phase: Callable[[str], None] = lambda _p: None,
) -> None:
    """The job's conda file as written, created at ``prefix`` (its final place)."""
    on_phase(phase.CONDA)
    env_file = prefix.parent / f".{prefix.name}.environment.yml"
    env_file.write_text(spec.text)
    try:
        cmd = commands.conda_create(tool, str(prefix), str(env_file))
        run_logged(cmd, log, dict(os.environ), time.monotonic() + timeout_s)
    finally:
        env_file.unlink(missing_ok=True)


def run_logged(
    cmd: list[str],
    log: TextIO,
    env: dict[str, str],
    deadline: float,
    *,
    on_phase: Callable[[str], None] = lambda _p: None,
    build_as: RunAs | None = None,
) -> None:
    """Run ``cmd`` (as ``build_as`` when given) with its output into ``log`` line by line.

    Raises:
        BuildFailed: a non-zero exit (the tool's first error line), or the time ran out.
    """
    log.write("$ " + " ".join(cmd) + "\n")
    log.flush()
    if not os.access(cmd[0], os.X_OK):
        raise BuildFailed(f"cannot run {cmd[0]}: not an executable file")
    try:
        proc = _start(cmd, env, build_as)
    except OSError as exc:  # e.g. the job's owner cannot run uv where prsd is installed
        who = f" as the job's owner {build_as.name}" if build_as is not None else ""
        raise BuildFailed(f"cannot run {cmd[0]}{who}: {exc.strerror or exc}") from None
    lines: list[str] = []
    reader = threading.Thread(target=_read, args=(proc, log, lines, on_phase), daemon=True)
    with proc:  # its pipe closed when done
        reader.start()
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 1.0))
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.wait()
            reader.join(timeout=10)
            limit = f"the build ran past its time limit ({' '.join(cmd[:3])} ...)"
            raise BuildFailed(limit) from None
        finally:
            _kill_group(proc)
        reader.join(timeout=10)
    log.flush()
    if proc.returncode != 0:
        raise BuildFailed(first_error_line("".join(lines)))


def _start(cmd: list[str], env: dict[str, str], build_as: RunAs | None) -> subprocess.Popen[str]:
    """``cmd`` in a session of its own, its output (both streams) in one pipe."""
    user, group, groups = (None, None, None) if build_as is None else build_as.ids()
    return subprocess.Popen(
        cmd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,
        umask=0o022,  # readable by the job owners the workers run as
        user=user,
        group=group,
        extra_groups=groups,
    )


def _read(
    proc: subprocess.Popen[str], log: TextIO, lines: list[str], on_phase: Callable[[str], None]
) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        log.write(line)
        log.flush()
        started = phase.phase_of(line)
        if started is not None:
            on_phase(started)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """What the command left running in its session (a build's helper) is ended."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
