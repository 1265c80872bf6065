"""The entry script of a pipeline's command step: run its command line once.

A command step is a job of one mini-batch, ``command/command.json`` (written at
submit by :mod:`prsd.jobspec.stepjob`); this runner is its ``run()``. It makes the
step's output folders (a ``uri_file`` output: its folder), then runs the command with
``/bin/sh -c`` in the step's code snapshot (``src/``), the job's interpreter's folder
first on ``PATH`` (so ``python`` is the job's environment), and the step's
environment variables. The command's stdout and stderr, together, go to this
worker's stdout (``prsctl logs``) and to ``std_log.txt`` in the node's user log folder
(the leader publishes it as ``logs/user/std_log.txt``); an attempt that follows an
earlier one says so there. A non-zero exit fails the attempt with the command's last
lines; the job's retry and timeout rules do the rest. The command's shell gets
SIGKILL when its worker dies (a timeout, a lost agent). Standard library only.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from collections import deque
from datetime import datetime, timezone
from typing import Any

from prsd.wire.logtree import STD_LOG_FILE, LogTree
from prsd.worker.entry_script import EntryScript

_TAIL_LINES = 20


class CommandFailed(Exception):
    """The step's command exited non-zero (the message has its last lines)."""


def init() -> None:
    """Nothing to prepare."""


def run(mini_batch: list[str]) -> list[str]:
    """Run the command of each ``command.json`` given (one); its name on success.

    Raises:
        CommandFailed: the command exited non-zero (its last lines in the message).
    """
    script = EntryScript()
    done = []
    for path in mini_batch:
        with open(path, encoding="utf-8") as f:
            spec = json.load(f)
        _run_one(spec, os.path.dirname(os.path.dirname(path)), script.log_dir)
        done.append(path)
    return done


def _run_one(spec: dict[str, Any], job_root: str, log_dir: str) -> None:
    for out in spec.get("outputs", []):
        target = out["path"]
        os.makedirs(os.path.dirname(target) if out["type"] == "uri_file" else target, exist_ok=True)
    os.makedirs(log_dir, exist_ok=True)
    earlier = _earlier_attempts(str(LogTree.of_job(job_root).node_std_log("*")))
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    tail: deque[str] = deque(maxlen=_TAIL_LINES)
    with open(os.path.join(log_dir, STD_LOG_FILE), "a", encoding="utf-8") as log:
        log.write(_header(spec, earlier))
        log.flush()
        proc = subprocess.Popen(
            ["/bin/sh", "-c", spec["command"]],
            cwd=os.path.join(job_root, "src"),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_worker,  # noqa: PLW1509 - a prctl call only
        )
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace")
            log.write(line)
            log.flush()
            sys.stdout.write(line)
            sys.stdout.flush()
            tail.append(line.rstrip("\n"))
        code = proc.wait()
        log.write(f"[prsd] the command exited with code {code}\n")
    if code != 0:
        last = " | ".join(line for line in tail if line.strip())
        said = f"; its last lines: {last}" if last else ""
        raise CommandFailed(f"the command exited with code {code}{said}")


def _die_with_worker() -> None:
    """(In the command's process.) SIGKILL when the worker dies, as the worker has."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass


def _earlier_attempts(pattern: str) -> int:
    """How many attempts of this step wrote a log before (on any node)."""
    return sum(_attempts_in(p) for p in glob.glob(pattern))


def _attempts_in(path: str) -> int:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return sum(1 for line in f if line.startswith("[prsd] attempt "))
    except OSError:
        return 0


def _header(spec: dict[str, Any], earlier: int) -> str:
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    lines = [f"[prsd] attempt {earlier + 1} of step {spec.get('step')} at {now}\n"]
    if earlier:
        lines.append(
            f"[prsd] this is a re-run: {earlier} earlier attempt(s) did not complete "
            "(the command failed, timed out, or its process was lost with its node)\n"
        )
    lines.append(f"[prsd] $ {spec['command']}\n")
    return "".join(lines)
