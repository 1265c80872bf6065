"""``leader/nodes.json``: the leader's view of the nodes, for ``prsctl nodes``.

Promise: :class:`NodesView` is what the leading leader observed of each node (its
heartbeat's host, sequence number, slots and GPUs, how long it has been silent on
the leader's own clock, whether it is presumed alive, whether it drains), written
each round by the leader and read by ``prsctl`` so that liveness shown to a user
is the leader's judgement, not a comparison of clocks. It round-trips through
:meth:`NodesView.to_json` / :meth:`NodesView.from_json`.

:func:`read_nodes_view` is the clients' one read of the file.

Errors: :meth:`NodesView.from_json` raises :class:`prsd.spool.badrecord.BadRecord`
for anything but such a record (a version newer than ``SCHEMA`` included); a node
entry that is not an object is refused with the whole record.
:func:`read_nodes_view` raises the same, and ``OSError`` when the file cannot be read
(``FileNotFoundError``: no leader wrote one yet).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from prsd.spool.badrecord import Doc, encode

if TYPE_CHECKING:
    from prsd.spool.layout import SpoolLayout

__all__ = ["SCHEMA", "NodeSeen", "NodesView", "read_nodes_view"]

SCHEMA = 1
NAME = "leader/nodes.json"


@dataclass(frozen=True)
class NodeSeen:
    """One node as the leader sees it."""

    host: str
    seq: int
    silent_s: float  # since its heartbeat last changed, on the leader's clock
    alive: bool
    draining: bool
    slots: int
    gpus: int

    @classmethod
    def from_doc(cls, doc: Doc) -> NodeSeen:
        return cls(
            doc.text("host"),
            doc.integer("seq"),
            doc.number("silent_s"),
            doc.flag("alive"),
            doc.flag("draining"),
            doc.integer("slots"),
            doc.integer("gpus"),
        )


@dataclass(frozen=True)
class NodesView:
    """The leader's view: its epoch, the node lease, and each node by id."""

    epoch: int
    node_lease_s: float
    nodes: dict[str, NodeSeen] = field(default_factory=dict)

    def to_json(self) -> bytes:
        return encode(
            {
                "epoch": self.epoch,
                "node_lease_s": self.node_lease_s,
                "nodes": {node_id: asdict(seen) for node_id, seen in self.nodes.items()},
            },
            SCHEMA,
        )

    @classmethod
    def from_json(cls, data: bytes) -> NodesView:
        """Read ``leader/nodes.json``.

        Raises:
            BadRecord: not such a record.
        """
        doc = Doc(data, NAME, SCHEMA)
        nodes = {
            node_id: NodeSeen.from_doc(Doc(entry, f"{NAME}: node {node_id!r}", SCHEMA))
            for node_id, entry in doc.obj("nodes").items()
        }
        return cls(doc.integer("epoch"), doc.number("node_lease_s"), nodes)


def read_nodes_view(spool: SpoolLayout) -> NodesView:
    """The spool's ``leader/nodes.json``.

    Raises:
        OSError: it cannot be read (``FileNotFoundError``: there is none yet).
        BadRecord: it is no such record.
    """
    return NodesView.from_json(spool.nodes_view.read_bytes())
