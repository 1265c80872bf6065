"""How a job ended (``jobs/<id>/state/final.json``): leader -> prsctl, agents, a successor.

Written once, by the leader that ends the job, before it removes the job's
``active/`` marker; a leader that finds it at take-over knows the job is over. It
carries the job's last counts (``counts``: the status document's count fields), so
a reader never needs a ``status.json`` that a deposed leader may have overwritten
late; a ``final.json`` of an older version has none (``{}``).
Standard library only, Python 3.7.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from prsd.wire.fields import Fields, RecordError

END_STATES = ("Completed", "Completed with failures", "Failed", "Canceled")


@dataclass(frozen=True)
class FinalState:
    """How a job ended."""

    state: str  # one of END_STATES
    reason: str
    exit_code: int
    output: str
    root_cause: str
    finished_at: str
    counts: dict[str, Any] = field(default_factory=dict)  # status.json's count fields

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), indent=1).encode()

    @classmethod
    def from_json(cls, data: bytes) -> FinalState:
        """Read ``final.json`` (RecordError: not one)."""
        f = Fields.of_json(data, "final.json")
        state = f.get("state", str)
        if state not in END_STATES:
            raise RecordError(f"final.json: state {state!r} is none of {', '.join(END_STATES)}")
        return cls(
            state,
            f.get("reason", str),
            f.get("exit_code", int),
            f.get("output", str),
            f.get("root_cause", str),
            f.get("finished_at", str),
            dict(f.get("counts", dict, default={})),
        )
