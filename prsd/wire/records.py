"""The mini-batch and the attempt outcome: what enters and leaves a worker, one definition each.

A :class:`MiniBatch` is what the leader planned and the worker runs: its index, the
opaque ``payload`` the splitter made and the worker's loader reads, its item count and
partition key; it travels in the task file and then in the ``run`` frame. An
:class:`Outcome` is what one attempt of one mini-batch did: the worker sends it in its
``done`` frame, the agent records it (or makes one when the worker could not: a
timeout, a death), and the leader reads it from the result file's metadata. The task
file and the result metadata that carry them are :mod:`prsd.spool.taskrecords`.

Each record has its encoder and a typed decoder that raises
:class:`~prsd.wire.fields.RecordError` on a malformed record. Standard library only,
Python 3.7: the worker builds its outcomes with this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from prsd.wire.fields import Fields, RecordError

if TYPE_CHECKING:
    from collections.abc import Mapping

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
        return outcome_json(self.__dict__)

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


def outcome_json(values: Mapping[str, Any]) -> dict[str, Any]:
    """An outcome's JSON from its field values (``index`` and ``status`` required; a
    field not given is its default): empty fields left out, index and status always in,
    in the fields' order. ``Outcome.to_json``, and the worker's ``Attempt`` without
    building the outcome first."""
    obj = {k: values[k] for k in _OUTCOME_FIELDS if k in values and values[k] not in _EMPTY}
    obj["index"], obj["status"] = values["index"], values["status"]
    return obj
