"""How a job ended (``jobs/<id>/state/final.json``): leader -> prsctl, agents, a successor.

Written once, by the leader that ends the job, before it removes the job's
``active/`` marker; a leader that finds it at take-over knows the job is over. It
carries the job's last counts (``counts``: the status document's count fields), so
a reader never needs a ``status.json`` that a deposed leader may have overwritten
late; a ``final.json`` of an older version has none (``{}``). The job's text
(``reason``, ``root_cause``) is in ``final.private.json`` beside it (the owner's and
the job's group's); ``final.json`` holds it blanked, for every user. It carries no
``schema`` key: it is version 1.

Errors: :meth:`FinalState.from_json` and :meth:`FinalState.from_obj` raise
:class:`prsd.spool.badrecord.BadRecord` naming the field for anything but such a
record (a state none of :data:`prsd.spool.states.ENDED`, a missing field, a field of the wrong type).
:func:`read_final_state` (the public ``final.json`` as any reader may read it, at most
:data:`MAX_FINAL_BYTES` of it) raises ``FileNotFoundError`` before the job has ended,
``OSError`` when the file cannot be read and ``BadRecord`` as above.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from prsd.spool.badrecord import Doc
from prsd.spool.states import ENDED, JobState

if TYPE_CHECKING:
    from prsd.spool.layout import JobLayout

NAME = "final.json"
MAX_FINAL_BYTES = 1 << 20  # read no further: a larger file is no final record


@dataclass(frozen=True)
class FinalState:
    """How a job ended."""

    state: str  # one of prsd.spool.states.ENDED (read back as a JobState)
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
        """Read ``final.json`` (BadRecord: not one)."""
        return cls._read(Doc(data, NAME, 1))

    @classmethod
    def from_obj(cls, obj: object) -> FinalState:
        """The record from ``final.json`` already parsed (BadRecord: not one)."""
        return cls._read(Doc(obj, NAME, 1))

    @classmethod
    def _read(cls, doc: Doc) -> FinalState:
        state = doc.text("state")
        if state not in ENDED:
            raise doc.bad(f"state {state!r} is none of {', '.join(ENDED)}")
        return cls(
            JobState(state),
            doc.text("reason"),
            doc.integer("exit_code"),
            doc.text("output"),
            doc.text("root_cause"),
            doc.text("finished_at"),
            dict(doc.obj("counts", default={})),
        )


def read_final_state(layout: JobLayout) -> FinalState:
    """The job's public ``state/final.json``, decoded (the daemons' trusted read of the
    private copy is :func:`prsd.spool.privaterecords.read_final`).

    Raises:
        FileNotFoundError: the job has not ended (or its folder is gone).
        OSError: the file cannot be read (``PermissionError``: this user may not).
        BadRecord: it is no final record (one cut at :data:`MAX_FINAL_BYTES` included).
    """
    with open(layout.final, "rb") as f:
        return FinalState.from_json(f.read(MAX_FINAL_BYTES))


PRIVATE_FINAL = "final.private.json"
"""Beside ``final.json``: the same record with its text, for the owner and the job's group."""
PRIVATE_FIELDS = ("reason", "root_cause")


def public_final(data: bytes) -> bytes:
    """``final.json``'s bytes with the job's text (``reason``, ``root_cause``) blanked (pure)."""
    doc = json.loads(data)
    for key in PRIVATE_FIELDS:
        if key in doc:
            doc[key] = ""
    doc["text_private"] = True
    return json.dumps(doc, indent=1).encode()


def private_final_path(final_path: str) -> str:
    """Where the private copy of the ``final.json`` at ``final_path`` lies."""
    return os.path.join(os.path.dirname(final_path), PRIVATE_FINAL)
