"""Can this node see a job's files? Checked before it claims any of the job's work.

Azure users lost days to inputs that existed on every node but one (a mount missing
or stale on one VM): the job failed there, one mini-batch at a time. A node that
cannot see an input, side input, the code or the output folder claims nothing of
the job and says so in its node report, so the leader can name it.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from prsd.logconfig import get_logger
from prsd.spool.nodereport import NodeReport, write_report

if TYPE_CHECKING:
    from prsd.jobspec import JobSpec
    from prsd.spool.layout import JobLayout

log = get_logger("prsd.agent")


def paths_to_check(spec: JobSpec) -> list[tuple[str, str]]:
    """(what, path) pairs a node must see to run the job."""
    pairs = [(spec.input.name, p) for p in spec.input.paths]
    pairs += [(f"side input {k}", v) for k, v in sorted(spec.side_inputs.items())]
    pairs.append(("code", spec.code_dir))
    pairs += [(f"output {k}", v) for k, v in sorted(spec.outputs.items())]
    if spec.append_row_to:
        pairs.append(("append_row_to folder", os.path.dirname(spec.append_row_to)))
    return pairs


def unseen(spec: JobSpec) -> list[str]:
    """Lines naming each path this node cannot see (empty: all visible)."""
    missing = []
    for what, path in paths_to_check(spec):
        if what.startswith(("output", "append_row_to")):
            # Output folders may not exist yet; their nearest existing parent must.
            probe = path
            while probe and not os.path.exists(probe) and os.path.dirname(probe) != probe:
                probe = os.path.dirname(probe)
            if not os.access(probe, os.W_OK):
                missing.append(f"{what}: {path} (not writable here)")
        elif not os.path.exists(path):
            missing.append(f"{what}: {path}")
    return missing


def report_unseen(layout: JobLayout, node_id: str, missing: list[str]) -> None:
    """Log what this node cannot see and write it to its node report (best effort)."""
    log.error("cannot see the job's files", job_id=layout.job_id, node_id=node_id, missing=missing)
    path = layout.node_report(node_id)
    report = NodeReport(
        node_id, updated_at=datetime.now(UTC).isoformat(timespec="seconds"), cannot_see=missing
    )
    try:
        write_report(path, report.encode())
    except OSError as exc:
        log.warning("cannot write node report", job_id=layout.job_id, error=str(exc))
