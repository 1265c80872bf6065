"""The nodes' reports of one job (``jobs/<id>/nodes/<node>.json``), as the leader reads them.

Each agent replaces its own report; the leader only reads them. A torn, foreign or
vanished report is skipped: the next look reads it again. Nothing here raises.

The leader looks every half second per job, and a report changes only when its node's
workers do: :class:`NodeReports` decodes a report again only when its file changed (a
new inode, size, modification or change time: one ``stat``, read before the file), or
after :data:`REREAD_S` in any case (a file replaced within one tick of a coarse
file-system clock by one of the same size on a reused inode looks unchanged; it is
read again that much later). With 32 nodes the decoding was a tenth of the leader's
CPU while their workers slept.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from prsd.spool.listing import listing
from prsd.spool.nodereport import NodeReport

if TYPE_CHECKING:
    from prsd.spool.layout import JobLayout

REREAD_S = 5.0
"""A report that looks unchanged is decoded again after this long."""

_Key = tuple[int, int, int, int]  # inode, size, mtime_ns, ctime_ns


class NodeReports:
    """The reports of one job's nodes, each decoded once per change."""

    def __init__(self, layout: JobLayout) -> None:
        self.layout = layout
        self._decoded: dict[str, tuple[_Key, float, NodeReport]] = {}  # name -> key, when
        self.decodes = 0  # reports decoded (the rest came from the cache)

    def read(self, now: float) -> list[NodeReport]:
        """The reports as they stand (``now``: a monotonic clock, for :data:`REREAD_S`)."""
        folder = self.layout.node_reports
        reports: list[NodeReport] = []
        kept: dict[str, tuple[_Key, float, NodeReport]] = {}
        for name in (n for n in listing(folder) if n.endswith(".json")):
            path = folder / name
            try:
                st = os.stat(path)
                key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
                known = self._decoded.get(name)
                if known is not None and known[0] == key and now - known[1] < REREAD_S:
                    entry = known
                else:  # read after the stat: never older bytes under a newer key
                    self.decodes += 1
                    entry = (key, now, NodeReport.decode(path.read_bytes()))
            except (OSError, ValueError):  # ValueError: RecordError, a torn or foreign report
                continue
            kept[name] = entry
            reports.append(entry[2])
        self._decoded = kept
        return reports


def blind_nodes(reports: list[NodeReport]) -> dict[str, list[str]]:
    """Nodes whose report says they cannot see some of the job's files."""
    return {r.node_id: list(r.cannot_see) for r in reports if r.cannot_see}
