"""The task body, the attempt outcome and the result footer: one definition each.

A task file (leader -> agent) is one JSON object naming the job and its mini-batches;
each mini-batch carries an opaque ``payload`` that the splitter made and the
worker's loader reads. A task file cannot lie: it carries ``sum``, a checksum of its
content (:func:`content_sum`; written as the last key, checked on the bytes as written
when they are laid out so, else on the content encoded again), it must hold at least one mini-batch, and a
mini-batch of a ``files`` task (its payload: the list of paths) must hold as many
paths as its ``n``;
any mismatch is a :class:`~prsd.wire.fields.RecordError`, so the agent voids the file
and the leader plans its mini-batches again. A task file of the previous version (no
``sum``) is still read, with the other two checks. An :class:`Outcome` is what one attempt of one mini-batch did:
the worker sends it in its ``done`` frame, the agent records it (or makes one when
the worker could not: a timeout, a death), and the leader reads it from the result
file's metadata (:class:`ResultMeta`), which ends with a 16-byte footer::

    <payload of mini-batch a><payload of b>...<metadata JSON><b"PRSDRES1"><length, 8 bytes>

Each record has its encoder and a typed decoder that raises
:class:`~prsd.wire.fields.RecordError` on a malformed record. Reading result files
safely (descriptors, no links) is :mod:`prsd.spool.records`. Standard library
only, Python 3.7: the worker builds its outcomes with this module too.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field, fields
from typing import Any

from prsd.wire.fields import Fields, RecordError, dumps

TASK_FORMAT = 1
RESULT_MAGIC = b"PRSDRES1"
FOOTER = struct.Struct(">8sQ")

# Attempt statuses, as written in processed_mini-batches.csv (docs/logs.md).
SUCCEEDED = "succeeded"
FAILED = "failed"
TIMEOUT = "timeout"
CRASHED = "crashed"
OOM = "oom"
REQUEUED = "requeued"
ATTEMPT_STATUSES = (SUCCEEDED, FAILED, TIMEOUT, CRASHED, OOM, REQUEUED)


@dataclass(frozen=True)
class MiniBatch:
    """One mini-batch as the leader planned it.

    Attributes:
        index: position in input order (the mini-batch id).
        payload: what the worker's loader reads (JSON value; shape depends on input).
        items: item count when known at planning (files), else -1 (tables: rows).
        key: the partition key value (``partition_keys`` jobs), else None.
    """

    index: int
    payload: Any
    items: int = -1
    key: dict[str, Any] | None = None

    @property
    def mb_id(self) -> str:
        """The zero-padded id used in logs and messages (``000000042``)."""
        return f"{self.index:09d}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"i": self.index, "p": self.payload, "n": self.items}
        if self.key is not None:
            out["k"] = self.key
        return out

    @classmethod
    def from_json(cls, obj: Any) -> MiniBatch:
        f = Fields(obj, "mini-batch")
        if "p" not in f.obj:
            raise RecordError("mini-batch: p (its payload) is missing")
        return cls(
            f.get("i", int), f.obj["p"], f.get("n", int, default=-1), f.get("k", dict, default=None)
        )


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
            RecordError: not a task file of a known format, or one whose checksum,
                mini-batch list or item counts do not hold (see the module header).
        """
        f = Fields.of_json(data, "task file")
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


_INT_FIELDS = ("items", "succeeded_items", "failed_items", "offset", "length", "pid")
_FLOAT_FIELDS = ("elapsed_s", "process_time_s", "run_method_s")
_STR_FIELDS = ("process_name", "start_time", "error", "traceback_tail", "error_file", "header")


@dataclass(frozen=True)
class Outcome:
    """What one attempt of one mini-batch did (one row of processed_mini-batches.csv).

    ``offset``/``length`` locate the mini-batch's append_row bytes in the result file.
    """

    index: int
    status: str
    items: int = 0
    succeeded_items: int = 0
    failed_items: int = 0
    offset: int = 0
    length: int = 0
    process_name: str = ""
    pid: int = 0
    start_time: str = ""
    elapsed_s: float = 0.0
    process_time_s: float = 0.0
    run_method_s: float = 0.0
    error: str = ""
    traceback_tail: str = ""
    error_file: str = ""
    header: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The outcome's JSON: empty fields left out, index and status always in."""
        pairs = ((k, getattr(self, k)) for k in _OUTCOME_FIELDS)
        obj = {k: v for k, v in pairs if v not in _EMPTY}
        obj["index"], obj["status"] = self.index, self.status
        return obj

    @classmethod
    def from_json(cls, obj: Any) -> Outcome:
        """Read an outcome (unknown fields are left out: a newer writer may add some)."""
        if type(obj) is dict and "index" in obj and obj.get("status") in ATTEMPT_STATUSES:
            # The common case in one pass (the checked path says why a record fails):
            # every known field of exactly its JSON type (a bool is not an int here),
            # the instance filled without the frozen __init__'s per-field cost.
            values = dict(_OUTCOME_DEFAULTS)
            values["extra"] = {}
            for k, v in obj.items():
                kinds = _OUTCOME_EXACT.get(k)
                if kinds is None:
                    continue  # a field of a newer writer
                kind = type(v)
                if kind not in kinds:
                    return cls._checked(obj)
                values[k] = float(v) if kind is int and k in _FLOAT_SET else v
            made = object.__new__(cls)
            made.__dict__.update(values)
            return made
        return cls._checked(obj)

    @classmethod
    def _checked(cls, obj: Any) -> Outcome:
        f = Fields(obj, "outcome")
        status = f.get("status", str)
        if status not in ATTEMPT_STATUSES:
            raise RecordError(
                f"outcome: status {status!r} is none of {', '.join(ATTEMPT_STATUSES)}"
            )
        values: dict[str, Any] = {k: f.get(k, int, default=0) for k in _INT_FIELDS}
        values.update({k: f.get(k, float, default=0.0) for k in _FLOAT_FIELDS})
        values.update({k: f.get(k, str, default="") for k in _STR_FIELDS})
        return cls(f.get("index", int), status, extra=f.get("extra", dict, default={}), **values)


_OUTCOME_FIELDS = tuple(f.name for f in fields(Outcome))
_OUTCOME_DEFAULTS: dict[str, Any] = {
    f.name: f.default for f in fields(Outcome) if f.name not in ("index", "status", "extra")
}
_FLOAT_SET = frozenset(_FLOAT_FIELDS)
_OUTCOME_EXACT: dict[str, tuple[type, ...]] = {
    "index": (int,),
    "status": (str,),
    "extra": (dict,),
    **dict.fromkeys(_INT_FIELDS, (int,)),
    **dict.fromkeys(_FLOAT_FIELDS, (int, float)),
    **dict.fromkeys(_STR_FIELDS, (str,)),
}
_EMPTY: tuple[Any, ...] = ("", 0, 0.0, {})


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
        """Parse the metadata (RecordError: malformed, or not matching its checksum; a
        result of the previous version has none)."""
        f = Fields.of_json(meta, "result metadata")
        written = f.get("sum", str, default=None)
        if written is not None and not sum_holds(meta, f.obj, written):
            raise RecordError("result metadata: its content does not match its checksum")
        outcomes = tuple(Outcome.from_json(o) for o in f.get("mbs", list))
        return cls(f.get("task", str), f.get("node", str), outcomes)
