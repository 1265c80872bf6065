"""A node's environment build for a job, as the agent reports it and the leader reads it.

Promise: :class:`EnvBuild` is the ``environment`` object of a node report
(``jobs/<id>/nodes/<node>.json``), passed on unchanged in ``status.json``'s
``nodes``: the build's ``state`` (``building``, ``ready`` or ``failed``), ``since``
(when the build or the wait for another's began, ISO 8601), the ``phase`` while
building and the ``error`` line of a failed build. The agent writes it with
:meth:`EnvBuild.to_obj`, the leader reads it with :meth:`EnvBuild.decode`; it
round-trips. It carries no ``schema`` key (``status.json`` shows it as it is): it
is version 1.

Errors: :meth:`EnvBuild.decode` raises :class:`prsd.spool.badrecord.BadRecord`
naming the field for a value that is not such an object (a state none of the
three, a missing ``state``, a field of the wrong type).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from prsd.spool.badrecord import Doc

__all__ = ["STATES", "EnvBuild", "EnvState"]

EnvState = Literal["building", "ready", "failed"]
STATES: tuple[EnvState, ...] = ("building", "ready", "failed")
NAME = "environment"


@dataclass(frozen=True)
class EnvBuild:
    """The state of the job's environment on one node."""

    state: EnvState
    since: str = ""  # ISO 8601 UTC: the build (or the wait for another's) began
    phase: str = ""  # while building: resolving, downloading, ...
    error: str = ""  # a failed build's first error line

    def to_obj(self) -> dict[str, Any]:
        """The node report's ``environment`` value."""
        obj: dict[str, Any] = {"state": self.state, "since": self.since}
        if self.phase and self.state == "building":
            obj["phase"] = self.phase
        if self.error:
            obj["error"] = self.error
        return obj

    @classmethod
    def decode(cls, value: Any) -> EnvBuild:
        """Read a node report's ``environment`` (a decoded JSON object).

        Raises:
            BadRecord: not such an object.
        """
        doc = Doc(value, NAME, 1)
        state = doc.text("state")
        if state not in STATES:
            raise doc.bad(f"state {state!r} is none of {', '.join(STATES)}")
        return cls(
            state,
            doc.text("since", default=""),
            doc.text("phase", default=""),
            doc.text("error", default=""),
        )
