"""A node's first init error, as the agent reports it and the leader reads it.

Promise: :class:`InitError` is the ``first_init_error`` object of a node report
(``jobs/<id>/nodes/<node>.json``): the first worker whose ``init()`` failed on that
node (its process name, the error line, the traceback's tail and the file holding
the whole traceback), or the node's environment build that failed (``environment``
set, with the build log). The agent writes it with :meth:`InitError.to_obj`, the
leader reads it with :meth:`InitError.decode`, so both agree on its fields; it
round-trips. A report of a version without ``schema`` reads as version 1.

Errors: :meth:`InitError.decode` raises :class:`prsd.spool.badrecord.BadRecord`
naming the field for a value that is not such an object (a missing ``error``, a
field of the wrong type, a newer schema).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from prsd.spool.badrecord import Doc

__all__ = ["SCHEMA", "InitError"]

SCHEMA = 1
NAME = "first_init_error"


@dataclass(frozen=True)
class InitError:
    """The first init failure of a node: a worker's ``init()``, or its environment."""

    process_name: str  # the worker ("worker 0 (pid 123)") or "environment"
    error: str  # one line: the exception, or the build's first error line
    traceback_tail: str = ""  # the last lines of the traceback ("" for an environment)
    error_file: str = ""  # the file with the whole traceback ("" for an environment)
    environment: bool = False  # the job's environment failed to build on the node
    build_log: str = ""  # the environment's build log (environment only)

    def to_obj(self) -> dict[str, Any]:
        """The node report's ``first_init_error`` value."""
        obj: dict[str, Any] = {"schema": SCHEMA, **asdict(self)}
        if not self.environment:
            del obj["environment"], obj["build_log"]
        return obj

    @classmethod
    def decode(cls, value: Any) -> InitError:
        """Read a node report's ``first_init_error`` (a decoded JSON object).

        Raises:
            BadRecord: not such an object.
        """
        doc = Doc(value, NAME, SCHEMA)
        return cls(
            doc.text("process_name", default=""),
            doc.text("error"),
            doc.text("traceback_tail", default=""),
            doc.text("error_file", default=""),
            doc.flag("environment", default=False),
            doc.text("build_log", default=""),
        )

    @property
    def where(self) -> str:
        """The file to look at: the build log of an environment, else the traceback's."""
        return self.build_log if self.environment else self.error_file
