"""Where the current worker is: its job, node and process, from prsd's ``EntryScript``.

Outside a prsd worker (a script tried by hand) the answers are the current folder,
node ``0`` and ``process000``, as ``EntryScript`` gives them.
"""

from __future__ import annotations

import os
from typing import Any


def entry_script() -> Any:
    """prsd's per-process ``EntryScript`` (imported late: only inside a worker)."""
    from prsd.worker.entry_script import EntryScript

    return EntryScript()


def job_root() -> str:
    """The job's folder in the spool (``jobs/<id>``), from the entry-script log folder."""
    es = entry_script()
    log_dir = os.path.normpath(es.log_dir)
    parts = log_dir.split(os.sep)
    if len(parts) >= 4 and parts[-2] == "entry_script_log" and parts[-3] == "user":
        return os.sep.join(parts[:-4]) or os.sep
    return os.getcwd()


def config() -> dict[str, Any]:
    cfg = entry_script().config
    return cfg if isinstance(cfg, dict) else {}


def metrics_file() -> str:
    """``logs/user/metrics/<node>/<process>.jsonl`` of this worker."""
    es = entry_script()
    root = job_root()
    if root == os.getcwd() and es.job_id == "local":
        return os.path.join(root, "metrics", f"{es.agent_name}.jsonl")
    return os.path.join(root, "logs", "user", "metrics", es.node_id, f"{es.agent_name}.jsonl")
