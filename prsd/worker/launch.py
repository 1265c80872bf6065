"""How the agent starts a worker: its command line and its environment.

The environment is built from an allow-list (:func:`worker_env`): nothing of the
agent's own environment reaches a worker unless named there.

The worker is ``PYTHON /abs/path/prsd/worker/boot.py --fd N --parent-pid P``, run by
path so any interpreter of Python 3.7 or later can run it without prsd installed
(``boot.py`` makes exactly ``prsd`` and ``azureml_user`` importable from this
installation). ``N`` is the worker's end of a ``socket.socketpair()`` passed with
``pass_fds``; ``P`` is the agent's pid, so a worker whose agent died before the worker
armed its parent-death signal exits at once.

Spawn workers from the thread that will live as long as the agent (the event loop
thread, e.g. ``anyio.open_process``), never from a short-lived worker thread: Linux
delivers the parent-death signal when the *thread* that forked the child exits.
"""

from __future__ import annotations

import os
import pwd
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

BOOT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "boot.py")
SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
# Taken from the agent's environment when set (docs/supervision.md, "A clean start").
PASSED_NAMES = frozenset({"LANG", "LC_ALL", "TZ"})
PASSED_PREFIXES = ("CUDA_", "NVIDIA_")


def worker_command(python: str | None, fd: int, parent_pid: int | None = None) -> list[str]:
    """The argv that starts one worker.

    Args:
        python: the job's interpreter (``task.environment.python``); None: the agent's.
        fd: the worker's end of the control socketpair, as numbered in the child
            (pass it with ``pass_fds``; it keeps its number).
        parent_pid: the pid of the process that spawns the worker (default: this one).
    """
    pid = os.getpid() if parent_pid is None else parent_pid
    return [python or sys.executable, BOOT_PATH, "--fd", str(fd), "--parent-pid", str(pid)]


def worker_env(
    base: Mapping[str, str],
    output_dir: str,
    extra: Mapping[str, str] | None = None,
    *,
    python: str | None = None,
    uid: int | None = None,
    working_dir: str = "/",
) -> dict[str, str]:
    """The environment of a worker (docs/entry-script.md), before GPU variables.

    Built from an allow-list, never inherited: the agent (often root) may hold
    credentials, ``HOME=/root`` or a ``PATH`` of its own that a job must not see.
    Taken from ``base``: :data:`PASSED_NAMES` and names starting with
    :data:`PASSED_PREFIXES` (but ``CUDA_VISIBLE_DEVICES``, which prsd assigns).
    Set here: ``PATH`` (the interpreter's folder, then :data:`SAFE_PATH`), ``HOME``,
    ``USER`` and ``LOGNAME`` of the user the worker runs as, ``PYTHONFAULTHANDLER=1``
    and ``AZUREML_BI_OUTPUT_PATH``. The agent adds ``CUDA_VISIBLE_DEVICES`` (when the
    worker holds a GPU slot), ``PRSD_GPU_COUNT_FOUND`` and ``AZ_BATCHAI_GPU_COUNT_FOUND``.

    Args:
        base: the agent's environment (``os.environ``).
        output_dir: the job's output folder (``AZUREML_BI_OUTPUT_PATH``).
        extra: the job's ``environment_variables``; they win over everything else.
        python: the worker's interpreter (None: the agent's).
        uid: the user the worker runs as (None: the agent's own).
        working_dir: ``HOME`` for a user the password database does not know.
    """
    env = {
        k: v
        for k, v in base.items()
        if (k in PASSED_NAMES or k.startswith(PASSED_PREFIXES)) and k != "CUDA_VISIBLE_DEVICES"
    }
    interpreter_bin = os.path.dirname(os.path.abspath(python or sys.executable))
    env["PATH"] = f"{interpreter_bin}:{SAFE_PATH}"
    env.update(user_variables(os.getuid() if uid is None else uid, working_dir))
    env["PYTHONFAULTHANDLER"] = "1"
    env["AZUREML_BI_OUTPUT_PATH"] = output_dir
    if extra:
        env.update(extra)
    return env


def user_variables(uid: int, working_dir: str) -> dict[str, str]:
    """``HOME``, ``USER`` and ``LOGNAME`` of ``uid`` (a user without an entry: its number)."""
    try:
        entry = pwd.getpwuid(uid)
    except KeyError:
        return {"HOME": working_dir or "/", "USER": str(uid), "LOGNAME": str(uid)}
    return {"HOME": entry.pw_dir or "/", "USER": entry.pw_name, "LOGNAME": entry.pw_name}
