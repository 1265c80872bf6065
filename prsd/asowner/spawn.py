"""Start a helper process with a job owner's ids: ``spawn_as``.

Promise: the child runs ``sys.executable -m MODULE ARGS`` with exactly the owner's
uid, gid and supplementary groups (set by ``subprocess`` in the child before
``exec``: setgroups, setgid, setuid), so it holds no capability of root; its
environment is a fixed minimal one (nothing of the daemon's environment leaks in
but ``PYTHONPATH``, so the same prsd is imported); its umask is ``077`` (what it
creates is private unless it says otherwise); it is a session leader, so a signal
meant for the daemon's terminal does not reach it. With ``run_as`` None the child
keeps the daemon's ids (the daemon is the owner already).

Errors: ``OSError`` / ``subprocess.SubprocessError`` when the process cannot start
(the interpreter unreadable by the owner, say): the caller fails that job, never
the daemon.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from prsd.owner import RunAs

OWNER_UMASK = 0o077
_KEPT_ENV = ("PYTHONPATH", "LANG", "LC_ALL", "TZ")


def helper_env(run_as: RunAs | None) -> dict[str, str]:
    """The environment of a helper: a fixed PATH, the owner's HOME and USER, little else."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}
    for name in _KEPT_ENV:
        if name in os.environ:
            env[name] = os.environ[name]
    if run_as is not None:
        env["USER"] = env["LOGNAME"] = run_as.name
        env["HOME"] = "/"
    return env


def spawn_as(
    run_as: RunAs | None,
    module: str,
    args: Sequence[str] = (),
    *,
    pass_fds: Sequence[int] = (),
    stdin: int | None = subprocess.DEVNULL,
    stdout: int | None = None,
    stderr: int | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``python -m module args`` as ``run_as`` (None: as the daemon itself)."""
    user, group, groups = (None, None, None) if run_as is None else run_as.ids()
    return subprocess.Popen(
        [sys.executable, "-m", module, *args],
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        env=helper_env(run_as),
        cwd="/",
        pass_fds=tuple(pass_fds),
        close_fds=True,
        start_new_session=True,
        umask=OWNER_UMASK,
        user=user,
        group=group,
        extra_groups=groups,
    )
