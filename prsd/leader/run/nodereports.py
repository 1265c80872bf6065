"""The nodes' reports of one job (``jobs/<id>/nodes/<node>.json``), as the leader reads them.

Each agent replaces its own report; the leader only reads them. A torn, foreign or
vanished report is skipped: the next look reads it again. Nothing here raises.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prsd.spool.listing import listing
from prsd.spool.nodereport import NodeReport

if TYPE_CHECKING:
    from prsd.spool.layout import JobLayout


def read_node_reports(layout: JobLayout) -> list[NodeReport]:
    """The nodes' reports for this job (``jobs/<id>/nodes/*.json``), as read."""
    folder = layout.node_reports
    reports: list[NodeReport] = []
    for name in (n for n in listing(folder) if n.endswith(".json")):
        try:
            reports.append(NodeReport.decode((folder / name).read_bytes()))
        except (OSError, ValueError):  # ValueError: RecordError, a torn or foreign report
            continue
    return reports


def blind_nodes(reports: list[NodeReport]) -> dict[str, list[str]]:
    """Nodes whose report says they cannot see some of the job's files."""
    return {r.node_id: list(r.cannot_see) for r in reports if r.cannot_see}
