"""A node's report on one job (``jobs/<id>/nodes/<node>.json``): agent -> leader, prsctl.

The agent replaces its report when its workers' init counters or its environment
change, or when it cannot see the job's files (then the report says only that);
the leader applies the job-wide init rules to all of them (docs/supervision.md) and
``prsctl status`` shows environments being built. A reader skips a torn or foreign
report and reads it again at its next look. :func:`environment_line` is the one
wording of a node's build for every view (``prsd run``, ``prsctl status``, the SDKs'
streams): ``building environment: resolving (0:00:12)``. Standard library only,
Python 3.7.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
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
    # {state, since, phase?, error?}: state building | ready | failed; phase while building
    environment: dict[str, Any] | None = None
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


def environment_line(environment: dict[str, Any] | None, now: datetime) -> str:
    """``building environment: PHASE (h:mm:ss)`` (the time since the build began, or the
    wait for another's), ``environment failed: ERROR``, or "" (none, or ready)."""
    env = environment or {}
    state = env.get("state")
    if state == "failed":
        return f"environment failed: {env.get('error', '')}"
    if state != "building":
        return ""
    phase = str(env.get("phase") or "")
    shown = _since(str(env.get("since", "")), now)
    return f"building environment{': ' + phase if phase else ''} ({shown})"


def _since(when: str, now: datetime) -> str:
    try:
        then = datetime.fromisoformat(when)
    except ValueError:
        return "?"
    if then.tzinfo is None:
        then = then.replace(tzinfo=timezone.utc)
    seconds = max(int((now - then).total_seconds()), 0)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
