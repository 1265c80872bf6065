"""An agent's heartbeat (``nodes/<node>.json``): agent -> leader, prsctl, other agents.

Promise: liveness is judged by whether the content changed (``seq`` grows, ``boot``
changes when the agent restarts), timed by the observer's own clock; the wall-clock
times inside are for people. The record carries its ``schema`` (1) as a field and a
reader takes a beat of any schema that has these fields (a newer agent's beat keeps its
node alive). Writing and reading the files is :mod:`prsd.spool.heartbeat`.

Errors: :meth:`Heartbeat.read` raises :class:`prsd.spool.badrecord.BadRecord` naming
the field for bytes that are not a heartbeat; :meth:`Heartbeat.decode` returns None
for them instead.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from prsd.spool.badrecord import BadRecord
from prsd.wire.fields import Fields, RecordError

HEARTBEAT_INTERVAL_S = 2.0


@dataclass(frozen=True)
class Heartbeat:
    """What an agent says about itself (schema 1, documented in docs/prsctl.md)."""

    node_id: str
    seq: int
    boot: str  # a random id per agent start
    pid: int
    host: str
    started_at: str  # ISO 8601 UTC, for people
    updated_at: str  # ISO 8601 UTC, for people
    slots: int  # worker slots this node offers
    gpus: int
    draining: bool = False
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)  # job id -> its workers
    heartbeat_interval_s: float = HEARTBEAT_INTERVAL_S  # how often this agent beats
    conflict: str = ""  # another agent writes this node id too: "pid P on host H"
    schema: int = 1
    fault: str = ""  # a storage fault the agent is waiting out ("" when healthy)
    drained: bool = False  # the agent's last beat: it drained and stopped cleanly

    def encode(self) -> bytes:
        return json.dumps(asdict(self), indent=1, sort_keys=True).encode()

    @classmethod
    def read(cls, data: bytes) -> Heartbeat:
        """Read a heartbeat (BadRecord: not one)."""
        try:
            return cls._read(Fields.of_json(data, "heartbeat"))
        except RecordError as exc:
            raise BadRecord(str(exc)) from None

    @classmethod
    def _read(cls, f: Fields) -> Heartbeat:
        return cls(
            f.get("node_id", str),
            f.get("seq", int),
            f.get("boot", str),
            f.get("pid", int),
            f.get("host", str),
            f.get("started_at", str),
            f.get("updated_at", str),
            f.get("slots", int),
            f.get("gpus", int),
            f.get("draining", bool, default=False),
            f.get("jobs", dict, default={}),
            f.get("heartbeat_interval_s", float, default=HEARTBEAT_INTERVAL_S),
            f.get("conflict", str, default=""),
            f.get("schema", int, default=1),
            f.get("fault", str, default=""),
            f.get("drained", bool, default=False),
        )

    @classmethod
    def decode(cls, data: bytes) -> Heartbeat | None:
        """A heartbeat; None for a torn or foreign file (the reader keeps its last look)."""
        try:
            return cls.read(data)
        except BadRecord:
            return None
