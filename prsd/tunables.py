"""Operator settings read from ``PRSD_*`` environment variables, resolved here only.

Each is documented where it acts (docs/supervision.md for the init rules and the
bounds of a worker). A value that cannot be read is ignored: the default applies.

These are Azure's fixed constants of the init rules (docs/supervision.md). Production
keeps the defaults; a development machine or a test may shorten them so that a
broken ``init()`` fails the job in seconds rather than minutes. A value that is
not a number >= 0 is ignored (the default applies).

- ``PRSD_INIT_RULE_WINDOW_S`` (default 120): the job-wide rule "after 2 minutes,
  ``2 * nodes * max_concurrency_per_instance`` init failures and no success".
- ``PRSD_INIT_GRACE_S`` (default 30): the ``+ 30`` of "a worker still in
  ``init()`` after ``3 * timeout + 30`` seconds".
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

INIT_RULE_WINDOW_S = 120.0
INIT_GRACE_S = 30.0


def _seconds(name: str, default: float, environ: Mapping[str, str] | None) -> float:
    text = (os.environ if environ is None else environ).get(name, "").strip()
    try:
        value = float(text) if text else default
    except ValueError:
        return default
    return value if value >= 0 else default


INBOX_GRACE_S = 600.0


def inbox_grace_s(environ: Mapping[str, str] | None = None) -> float:
    """``PRSD_INBOX_GRACE_S``: how long an inbox folder may stay without a job.yaml
    before the leader moves it aside (docs/spool.md, "Refused inbox folders")."""
    return _seconds("PRSD_INBOX_GRACE_S", INBOX_GRACE_S, environ)


REFUSED_KEEP_S = 7 * 24 * 3600.0


def refused_keep_s(environ: Mapping[str, str] | None = None) -> float:
    """``PRSD_REFUSED_KEEP_S``: how long a refused inbox folder is kept in
    ``jobs/.refused/`` before the leader removes it (docs/spool.md, "Refused inbox folders")."""
    return _seconds("PRSD_REFUSED_KEEP_S", REFUSED_KEEP_S, environ)


SPEC_LOAD_TIMEOUT_S = 60.0
INTAKE_LOADS = 4


def spec_load_timeout_s(environ: Mapping[str, str] | None = None) -> float:
    """``PRSD_SPEC_LOAD_TIMEOUT_S``: how long loading one job's spec at intake may take
    before the job fails (docs/security.md, "Intake never waits for one job")."""
    return _seconds("PRSD_SPEC_LOAD_TIMEOUT_S", SPEC_LOAD_TIMEOUT_S, environ)


def intake_loads(environ: Mapping[str, str] | None = None) -> int:
    """``PRSD_INTAKE_LOADS``: how many jobs' specs a leader loads at once (at least 1)."""
    return max(1, int(_seconds("PRSD_INTAKE_LOADS", INTAKE_LOADS, environ)))


def init_rule_window_s(environ: Mapping[str, str] | None = None) -> float:
    """Seconds after the job's start before the init-failure count can fail it."""
    return _seconds("PRSD_INIT_RULE_WINDOW_S", INIT_RULE_WINDOW_S, environ)


def init_grace_s(environ: Mapping[str, str] | None = None) -> float:
    """The fixed part of the init deadline ``3 * timeout + grace``."""
    return _seconds("PRSD_INIT_GRACE_S", INIT_GRACE_S, environ)


# --- bounds of one worker (docs/supervision.md, "Bounds") ------------------------------

MAX_WORKERS_PER_NODE = 256  # the slot cap never exceeds this, whatever the machine
MAX_RESULT_ROWS = 10_000_000  # elements one run() may return
MAX_RESULT_BYTES = 256 * 1024**2  # append_row bytes of one mini-batch
MAX_CAPTURED_OUTPUT_BYTES = 64 * 1024**2  # per stdout or stderr file of a worker
_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int | None:
    """Bytes from ``1048576``, ``200M``, ``200MB``, ``1GiB`` (1024-based); None if not one."""
    match = _SIZE.match(text)
    if match is None:
        return None
    unit = str(match.group(2)).lower()
    power: int = "kmgt".index(unit) + 1 if unit else 0
    return int(match.group(1)) * (1 << (10 * power))


def _size(name: str, default: int | None, environ: Mapping[str, str] | None) -> int | None:
    text = (os.environ if environ is None else environ).get(name, "").strip()
    value = parse_size(text) if text else None
    return value if value else default


def worker_memory_max_bytes(environ: Mapping[str, str] | None = None) -> int | None:
    """``PRSD_WORKER_MEMORY_MAX``: each worker's memory limit (None: no limit)."""
    return _size("PRSD_WORKER_MEMORY_MAX", None, environ)


def worker_memory_limit(job_bytes: int | None, node_bytes: int | None) -> int | None:
    """The tighter of the job's ``resources.max_memory_per_worker`` and the node's limit."""
    limits = [b for b in (job_bytes, node_bytes) if b]
    return min(limits) if limits else None


WORKER_PIDS_MAX = 4096


def worker_pids_max(environ: Mapping[str, str] | None = None) -> int:
    """``PRSD_WORKER_PIDS_MAX``: processes and threads one worker may have at once
    (``pids.max`` of its cgroup), and the ``RLIMIT_NPROC`` a worker run as a job's
    owner gets (which counts every process of that uid). Default 4096."""
    return max(1, int(_seconds("PRSD_WORKER_PIDS_MAX", WORKER_PIDS_MAX, environ)))


HAND_AHEAD_WHEN_LISTED = 16


def hand_ahead_when_listed(environ: Mapping[str, str] | None = None) -> int:
    """``PRSD_HAND_AHEAD_WHEN_LISTED``: a task an agent claimed ahead goes to a busy
    worker, behind its running task, only while the agent's last listing of the job's
    ``pending/`` named this many tasks (docs/spool.md; default 16, at least 1)."""
    return max(1, int(_seconds("PRSD_HAND_AHEAD_WHEN_LISTED", HAND_AHEAD_WHEN_LISTED, environ)))


def max_workers_per_node(environ: Mapping[str, str] | None = None) -> int:
    """``PRSD_MAX_WORKERS_PER_NODE``: workers one job may run on a node (default 4 x CPUs, <= 256)."""
    default = min(4 * (os.cpu_count() or 1), MAX_WORKERS_PER_NODE)
    value = _seconds("PRSD_MAX_WORKERS_PER_NODE", float(default), environ)
    return max(1, int(value))


def max_result_rows(environ: Mapping[str, str] | None = None) -> int:
    """``PRSD_MAX_RESULT_ROWS``: elements one ``run()`` may return (default 10 million)."""
    return max(1, int(_seconds("PRSD_MAX_RESULT_ROWS", MAX_RESULT_ROWS, environ)))


def max_result_bytes(environ: Mapping[str, str] | None = None) -> int:
    """``PRSD_MAX_RESULT_BYTES``: append_row bytes of one mini-batch (default 256 MiB)."""
    return _size("PRSD_MAX_RESULT_BYTES", MAX_RESULT_BYTES, environ) or MAX_RESULT_BYTES


def max_captured_output_bytes(environ: Mapping[str, str] | None = None) -> int:
    """``PRSD_MAX_CAPTURED_OUTPUT``: bytes kept per worker stdout/stderr file (default 64 MiB)."""
    default = MAX_CAPTURED_OUTPUT_BYTES
    return _size("PRSD_MAX_CAPTURED_OUTPUT", default, environ) or default
