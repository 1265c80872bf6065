"""A node's report on one job (``jobs/<id>/nodes/<node>.json``): agent -> leader, prsctl.

The agent replaces its report when its workers' init counters or its environment
change, or when it cannot see the job's files (then the report says only that);
the leader applies the job-wide init rules to all of them (docs/supervision.md) and
``prsctl status`` shows environments being built. A reader skips a torn or foreign
report and reads it again at its next look. Standard library only, Python 3.9.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from prsd.wire.fields import Fields


@dataclass(frozen=True)
class NodeReport:
    """One node's part in a job: its workers by state, init counters, environment."""

    node_id: str
    updated_at: str = ""  # ISO 8601 UTC, for people
    workers: int | None = None  # the workers the node aims for (None: not said)
    starting: int = 0
    idle: int = 0
    busy: int = 0
    stopping: int = 0
    init_successes: int = 0
    init_failures: int = 0
    init_failures_in_row: int = 0
    init_timeouts: int = 0
    gave_up: bool = False  # the node stopped starting workers (its init rule)
    first_init_error: dict[str, Any] | None = None
    environment: dict[str, Any] | None = None  # {state, since, error?} while one is built
    cannot_see: list[str] = field(default_factory=list)  # job paths the node cannot see

    def encode(self) -> bytes:
        obj = {k: v for k, v in asdict(self).items() if v is not None and v != []}
        return json.dumps(obj, indent=1).encode()

    @classmethod
    def decode(cls, data: bytes) -> NodeReport:
        """Read a report (RecordError: not one)."""
        f = Fields.of_json(data, "node report")
        ints = ("starting", "idle", "busy", "stopping", "init_successes", "init_failures")
        counts = {k: f.get(k, int, default=0) for k in (*ints, "init_failures_in_row")}
        cannot_see = f.get("cannot_see", list, default=[])
        return cls(
            node_id=f.get("node_id", str),
            updated_at=f.get("updated_at", str, default=""),
            workers=f.get("workers", int, type(None), default=None),
            init_timeouts=f.get("init_timeouts", int, default=0),
            gave_up=f.get("gave_up", bool, default=False),
            first_init_error=f.get("first_init_error", dict, type(None), default=None),
            environment=f.get("environment", dict, type(None), default=None),
            cannot_see=[str(p) for p in cannot_see],
            **counts,
        )
