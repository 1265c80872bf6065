"""Decoding one JSON object handed in as bytes or text that has no record type of its own:
the storage layer's one ``json.loads`` for the daemons' and clients' other JSON.

What it decodes: a message of a local socket or pipe (the fork server's answers, the
owner side's channel, the planner helper's request), one line of a command's output
(the doctor's racer), a line of a record file whose record decodes the object (a
kept result), a settings file its caller has read (a code folder's
``parallel_run_step.settings.json``, the Azure client's ``config.json``), and the
text of a serialised job spec. The spool's records are decoded by the modules here
that own them (and the worker's frames through :class:`prsd.wire.fields.Fields`); a
test bans ``json.loads`` outside prsd/spool, prsd/worker and prsd/wire
(tests/unit/test_spool_access.py).

Promise: :func:`decode_object` opens nothing and reads nothing: it decodes what it
is given and answers the object as a ``dict``, or raises.

Errors: ``ValueError`` (``json.JSONDecodeError``, ``UnicodeDecodeError``) for what
is not JSON; :class:`NotAnObject`, a ``ValueError`` too, for JSON that is not an
object (the value it holds, for a caller that names what it found).
"""

from __future__ import annotations

import json
from typing import Any


class NotAnObject(ValueError):
    """JSON that is a list, a string, a number, true, false or null: not an object."""

    def __init__(self, value: Any) -> None:
        super().__init__(f"{type(value).__name__} where a JSON object is expected")
        self.value = value


def decode_object(data: bytes | str) -> dict[str, Any]:
    """The JSON object in ``data``.

    Raises:
        ValueError: ``data`` is not JSON.
        NotAnObject: it is JSON, but not an object.
    """
    value = json.loads(data)
    if not isinstance(value, dict):
        raise NotAnObject(value)
    return value
