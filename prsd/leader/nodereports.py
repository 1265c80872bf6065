"""The nodes' reports of one job (``jobs/<id>/nodes/<node>.json``), as the leader reads them.

Each agent replaces its own report; the leader only reads them. A torn, foreign or
vanished report is skipped: the next look reads it again. Nothing here raises.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prsd.storage.layout import JobLayout


def read_node_reports(layout: JobLayout) -> list[dict[str, Any]]:
    """The nodes' reports for this job (``jobs/<id>/nodes/*.json``), as read."""
    folder = layout.root / "nodes"
    reports: list[dict[str, Any]] = []
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
    except FileNotFoundError:
        return reports
    for name in names:
        try:
            report = json.loads((folder / name).read_bytes())
        except (OSError, ValueError):
            continue
        if isinstance(report, dict):
            reports.append(report)
    return reports


def blind_nodes(reports: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Nodes whose report says they cannot see some of the job's files."""
    return {
        str(r.get("node_id", "?")): [str(m) for m in r["cannot_see"]]
        for r in reports
        if isinstance(r.get("cannot_see"), list) and r["cannot_see"]
    }
