"""Reading a decoded JSON object field by field, refusing what does not fit.

Every decoder of :mod:`prsd.wire` reads its record through :class:`Fields`: a field
that is missing (and required) or of the wrong type raises :class:`RecordError`
naming the record, the field, what was found and what was expected, so a malformed
record fails where it is read, with a message that says why. Standard library only,
Python 3.7.
"""

from __future__ import annotations

import json
from typing import Any

_MISSING = object()


class RecordError(ValueError):
    """A record (file content or frame) that is not what its decoder reads."""


def _kind(types: tuple[type, ...]) -> str:
    return " or ".join("null" if t is type(None) else t.__name__ for t in types)


class Fields:
    """The fields of one JSON object, read as ``record``."""

    def __init__(self, obj: Any, record: str) -> None:
        if not isinstance(obj, dict):
            raise RecordError(f"{record}: {type(obj).__name__} where an object is expected")
        self.obj = obj
        self.record = record

    @classmethod
    def of_json(cls, data: bytes | str, record: str) -> Fields:
        """Parse ``data`` as one JSON object."""
        try:
            obj = json.loads(data)
        except (UnicodeDecodeError, ValueError) as exc:
            raise RecordError(f"{record}: not JSON ({exc})") from exc
        return cls(obj, record)

    def get(self, key: str, *types: type, default: Any = _MISSING) -> Any:
        """Field ``key``, one of ``types`` (an int is accepted as a float; a bool never
        as a number). Missing: ``default``, or an error when there is none."""
        value = self.obj.get(key, _MISSING)
        if value is _MISSING:
            if default is _MISSING:
                raise RecordError(f"{self.record}: {key} is missing")
            return default
        if isinstance(value, bool) and bool not in types:
            raise RecordError(f"{self.record}: {key} is a boolean where {_kind(types)} is expected")
        if float in types and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if not isinstance(value, types):
            raise RecordError(
                f"{self.record}: {key} is {type(value).__name__} where {_kind(types)} is expected"
            )
        return value


def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON, as every record is written."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
