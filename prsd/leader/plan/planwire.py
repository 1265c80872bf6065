"""The plan stream's records: what the owner's planner sends the leader, one a line.

A job's input is read by a process with the job owner's ids (:mod:`prsd.leader.plan.planhelper`);
it sends the leader what it plans as newline-terminated JSON objects on a pipe, each
with a type ``t``:

- ``{"t": "mb", "mb": {...}}``: the next mini-batch (:class:`MiniBatch` JSON), in order;
- ``{"t": "skip", "path": P, "why": W}``: an input path left out, and why;
- ``{"t": "order", "order": {...}}``: a retry's order of units (``retry_order.json``,
  written by the leader: the job's folder is not the owner's to write);
- ``{"t": "alive"}``: nothing new, the planner is still working (sent every few seconds);
- ``{"t": "error", "msg": M}``: the plan failed; ``M`` is the one-line reason;
- ``{"t": "end"}``: the plan is complete.

Promise: :func:`encode` of a record and :class:`RecordReader` fed the bytes in any
cuts give the record back; a line is never longer than :data:`MAX_LINE_BYTES`.

Errors: :class:`PlanWireError` (an :class:`~prsd.errors.InputError`) for a line that is
not a record of a known type, or is longer than the bound: the job fails with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prsd.errors import InputError
from prsd.wire.fields import Fields, RecordError, dumps
from prsd.wire.records import MiniBatch

MAX_LINE_BYTES = 64 * 1024 * 1024  # a mini-batch of many long paths fits; a runaway does not
TYPES = ("mb", "skip", "order", "alive", "error", "end")


class PlanWireError(InputError):
    """A line on the plan stream that is not a plan record."""


@dataclass(frozen=True)
class Record:
    """One decoded record: its type and its fields."""

    kind: str
    mb: MiniBatch | None = None
    path: str = ""
    why: str = ""
    msg: str = ""
    order: dict[str, Any] | None = None


def encode(record: Record) -> bytes:
    """The record as one line (UTF-8 JSON; a newline inside a string is escaped)."""
    obj: dict[str, Any] = {"t": record.kind}
    if record.kind == "mb":
        assert record.mb is not None
        obj["mb"] = record.mb.to_json()
    elif record.kind == "skip":
        obj["path"], obj["why"] = record.path, record.why
    elif record.kind == "error":
        obj["msg"] = record.msg
    elif record.kind == "order":
        obj["order"] = record.order
    return dumps(obj) + b"\n"


def decode(line: bytes) -> Record:
    """One line (without its newline) as a record.

    Raises:
        PlanWireError: not JSON, not an object, an unknown type or a field missing.
    """
    try:
        f = Fields.of_json(line, "plan record")
        kind = f.get("t", str)
        if kind == "mb":
            return Record(kind, mb=MiniBatch.from_json(f.obj.get("mb")))
        if kind == "skip":
            return Record(kind, path=f.get("path", str), why=f.get("why", str))
        if kind == "error":
            return Record(kind, msg=f.get("msg", str))
        if kind == "order":
            return Record(kind, order=f.get("order", dict))
        if kind in TYPES:
            return Record(kind)
        raise RecordError(f"plan record: unknown type {kind!r}")
    except RecordError as exc:
        raise PlanWireError(f"the input planner sent a bad record: {exc}") from None


class RecordReader:
    """Bytes in, whole records out: a partial last line waits for the rest."""

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        self._buf = bytearray()
        self._max = max_line

    def feed(self, data: bytes) -> list[Record]:
        """The records completed by ``data``.

        Raises:
            PlanWireError: a bad record, or a line longer than the bound.
        """
        self._buf += data
        out: list[Record] = []
        start = 0
        while True:
            end = self._buf.find(b"\n", start)
            if end < 0:
                break
            out.append(decode(bytes(self._buf[start:end])))
            start = end + 1
        del self._buf[:start]
        if len(self._buf) > self._max:
            raise PlanWireError(f"the input planner sent a line of more than {self._max} bytes")
        return out

    @property
    def partial(self) -> int:
        """Bytes of an unfinished line held (a stream that ends here was cut short)."""
        return len(self._buf)
