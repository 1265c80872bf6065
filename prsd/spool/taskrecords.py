"""The task file and the result file's metadata: the spool's records of a task's life.

Promise: a task file (leader -> agent) is one JSON object naming the job and its
mini-batches (:class:`prsd.wire.records.MiniBatch`, as the worker receives them); each
carries an opaque ``payload`` that the splitter made and the worker's loader reads. A
task file cannot lie: it carries ``sum``, a checksum of its content
(:func:`content_sum`; written as the last key, checked on the bytes as written
when they are laid out so, else on the content encoded again), it must hold at least one mini-batch, and a mini-batch of a
``files`` task (its payload: the list of paths) must hold as many paths as its ``n``.
A task file of the previous version (no ``sum``) is still read, with the other two
checks. A result file ends with its metadata (:class:`ResultMeta`: the attempt's
:class:`prsd.wire.records.Outcome` of each mini-batch, as the worker sent them) and a
16-byte footer::

    <payload of mini-batch a><payload of b>...<metadata JSON><b"PRSDRES1"><length, 8 bytes>

Reading result files safely (descriptors, no links) is :mod:`prsd.spool.resultfiles`.

Errors: :meth:`TaskBody.decode` and :meth:`ResultMeta.decode` raise
:class:`prsd.spool.badrecord.BadRecord` naming the record and the field: a mismatch
makes the agent void the task file and the leader plan its mini-batches again.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from typing import Any

from prsd.spool.badrecord import BadRecord
from prsd.wire.fields import Fields, RecordError, dumps
from prsd.wire.records import MiniBatch, Outcome

__all__ = [
    "FOOTER",
    "RESULT_MAGIC",
    "TASK_FORMAT",
    "ResultMeta",
    "TaskBody",
    "content_sum",
    "dumps_summed",
    "sum_holds",
]

TASK_FORMAT = 1
RESULT_MAGIC = b"PRSDRES1"
FOOTER = struct.Struct(">8sQ")


@dataclass(frozen=True)
class TaskBody:
    """The content of a task file."""

    job_id: str
    kind: str
    mini_batches: tuple[MiniBatch, ...]

    def encode(self) -> bytes:
        obj: dict[str, Any] = {
            "v": TASK_FORMAT,
            "job": self.job_id,
            "kind": self.kind,
            "mbs": [mb.to_json() for mb in self.mini_batches],
        }
        return dumps_summed(obj)

    @classmethod
    def decode(cls, data: bytes) -> TaskBody:
        """Parse a task file.

        Raises:
            BadRecord: not a task file of a known format, or one whose checksum,
                mini-batch list or item counts do not hold (see the module header).
        """
        try:
            return cls._read(Fields.of_json(data, "task file"), data)
        except RecordError as exc:
            raise BadRecord(str(exc)) from None

    @classmethod
    def _read(cls, f: Fields, data: bytes) -> TaskBody:
        version = f.get("v", int, default=None)
        if version != TASK_FORMAT:
            raise RecordError(f"task file format {version!r} is not {TASK_FORMAT}")
        written = f.get("sum", str, default=None)
        if written is not None and not sum_holds(data, f.obj, written):
            raise RecordError("task file: its content does not match its checksum")
        mbs = tuple(MiniBatch.from_json(m) for m in f.get("mbs", list))
        if not mbs:
            raise RecordError("task file: it names no mini-batch")
        kind = f.get("kind", str)
        for mb in mbs:
            if kind == "files" and isinstance(mb.payload, list) and len(mb.payload) != mb.items:
                raise RecordError(
                    f"task file: mini-batch {mb.mb_id} lists {len(mb.payload)} items, "
                    f"not its n = {mb.items}"
                )
        return cls(f.get("job", str), kind, mbs)


def content_sum(obj: dict[str, Any]) -> str:
    """The checksum of a record: SHA-256 (first 16 hex digits) of its compact JSON
    without its ``sum`` key (JSON read back and written again gives the same bytes)."""
    rest = {k: v for k, v in obj.items() if k != "sum"}
    return hashlib.sha256(dumps(rest)).hexdigest()[:16]


def dumps_summed(rest: dict[str, Any]) -> bytes:
    """``rest`` (a non-empty record without ``sum``) as compact JSON with its checksum
    as the last key: the bytes ``dumps(rest | {"sum": content_sum(rest)})`` gives, with
    the JSON encoded once."""
    body = dumps(rest)
    digest = hashlib.sha256(body).hexdigest()[:16]
    return body[:-1] + b',"sum":"' + digest.encode() + b'"}'


def sum_holds(data: bytes, obj: dict[str, Any], written: str) -> bool:
    """Does ``written`` (the ``sum`` of ``obj``, parsed from ``data``) match its content?

    A record written by :func:`dumps_summed` (or its equal, the sum its last key) is
    checked on its bytes as written; any other layout by encoding it again
    (:func:`content_sum`)."""
    tail = b',"sum":"' + written.encode() + b'"}'
    if data.endswith(tail):
        body = data[: -len(tail)] + b"}"
        if hashlib.sha256(body).hexdigest()[:16] == written:
            return True
    return written == content_sum(obj)


@dataclass(frozen=True)
class ResultMeta:
    """The metadata at the end of a result file."""

    task: str
    node_id: str
    outcomes: tuple[Outcome, ...]

    def encode(self) -> bytes:
        """The metadata JSON (with its checksum, ``sum``) and its footer."""
        obj: dict[str, Any] = {
            "task": self.task,
            "node": self.node_id,
            "mbs": [o.to_json() for o in self.outcomes],
        }
        meta = dumps_summed(obj)
        return meta + FOOTER.pack(RESULT_MAGIC, len(meta))

    @classmethod
    def decode(cls, meta: bytes) -> ResultMeta:
        """Parse the metadata (BadRecord: malformed, or not matching its checksum; a
        result of the previous version has none)."""
        try:
            return cls._read(Fields.of_json(meta, "result metadata"), meta)
        except RecordError as exc:
            raise BadRecord(str(exc)) from None

    @classmethod
    def _read(cls, f: Fields, meta: bytes) -> ResultMeta:
        written = f.get("sum", str, default=None)
        if written is not None and not sum_holds(meta, f.obj, written):
            raise RecordError("result metadata: its content does not match its checksum")
        outcomes = tuple(Outcome.from_json(o) for o in f.get("mbs", list))
        return cls(f.get("task", str), f.get("node", str), outcomes)
