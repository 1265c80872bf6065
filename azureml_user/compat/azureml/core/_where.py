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
    from prsd.wire.logtree import LogTree

    job = LogTree.job_of_entry_script_logs(os.path.normpath(entry_script().log_dir))
    return str(job) if job is not None else os.getcwd()


def config() -> dict[str, Any]:
    cfg = entry_script().config
    return cfg if isinstance(cfg, dict) else {}


def metrics_file() -> str:
    """``logs/user/metrics/<node>/<process>.jsonl`` of this worker."""
    from prsd.wire.logtree import LogTree

    es = entry_script()
    root = job_root()
    if root == os.getcwd() and es.job_id == "local":
        return os.path.join(root, "metrics", f"{es.agent_name}.jsonl")
    return str(LogTree.of_job(root).metrics(es.node_id, es.agent_name))
