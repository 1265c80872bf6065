"""Decoding the spool's records: one error, :class:`BadRecord`, for every bad one.

Promise: every record module of the storage layer (prsd/spool/*record*.py) encodes
with :func:`encode` (a JSON object carrying ``schema``, its version) and decodes
through :class:`Doc`, which refuses with :class:`BadRecord` whatever its decoder cannot
use: bytes that are not UTF-8 JSON, a JSON value that is not an object, a ``schema``
newer than the decoder knows (or not a positive integer), a missing field, a field of
the wrong type. A record written before it carried ``schema`` reads as version 1. The
message names the record and the field, so a damaged file is reported where it is
read. :class:`BadRecord` is a :class:`prsd.wire.fields.RecordError` (a ``ValueError``),
so callers that catch those keep working.

Errors: :class:`BadRecord` only.
"""

from __future__ import annotations

import json
from typing import Any

from prsd.wire.fields import Fields, RecordError

__all__ = ["BadRecord", "Doc", "encode"]

_MISSING: Any = object()


class BadRecord(RecordError):
    """A spool record that is missing, malformed, of a newer schema, or names something unsafe."""


_VALUE = json.JSONEncoder().encode  # no indent: json's C encoder (indented output is pure Python)


def encode(doc: dict[str, Any], schema: int) -> bytes:
    """``doc`` as a record of version ``schema``: JSON (UTF-8, ASCII escapes), one
    top-level field per line (for ``cat`` and ``grep``), each value compact on its line.

    Not ``json.dumps(indent=...)``: its output is made in pure Python, about ten times
    slower, and the leader writes ``status.json`` twice a second per job and
    ``leader/nodes.json`` (every node) once a second.
    """
    fields = {"schema": schema, **doc}
    return (
        "{\n" + ",\n".join(f" {_VALUE(k)}: {_VALUE(v)}" for k, v in fields.items()) + "\n}\n"
    ).encode()


class Doc:
    """The fields of one record (``name``, e.g. ``state/started.json``) of version
    ``schema`` or older, read from its bytes or from an already decoded value."""

    def __init__(self, data: bytes | str | Any, name: str, schema: int) -> None:
        if isinstance(data, bytes | str):
            try:
                data = json.loads(data)
            except (UnicodeDecodeError, ValueError) as exc:
                raise BadRecord(f"{name}: not JSON ({exc})") from None
        try:
            self._fields = Fields(data, name)
        except RecordError as exc:
            raise BadRecord(str(exc)) from None
        self.name = name
        version = self._fields.obj.get("schema", 1)
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise BadRecord(f"{name}: schema {version!r} is not a version number")
        if version > schema:
            raise BadRecord(
                f"{name}: schema {version} is newer than this prsd reads ({schema}): "
                "written by a newer version"
            )
        self.version = version

    @property
    def document(self) -> dict[str, Any]:
        """The whole decoded object."""
        obj: dict[str, Any] = self._fields.obj
        return obj

    def get(self, key: str, *types: type, default: Any = _MISSING) -> Any:
        """Field ``key``, one of ``types``; missing: ``default``, else :class:`BadRecord`."""
        try:
            if default is _MISSING:
                return self._fields.get(key, *types)
            return self._fields.get(key, *types, default=default)
        except RecordError as exc:
            raise BadRecord(str(exc)) from None

    def text(self, key: str, default: Any = _MISSING) -> str:
        value: str = self.get(key, str, default=default)
        return value

    def integer(self, key: str, default: Any = _MISSING) -> int:
        value: int = self.get(key, int, default=default)
        return value

    def number(self, key: str, default: Any = _MISSING) -> float:
        value: float = self.get(key, float, default=default)
        return value

    def flag(self, key: str, default: Any = _MISSING) -> bool:
        value: bool = self.get(key, bool, default=default)
        return value

    def obj(self, key: str, default: Any = _MISSING) -> dict[str, Any]:
        value: dict[str, Any] = self.get(key, dict, default=default)
        return value

    def texts(self, key: str, default: Any = _MISSING) -> tuple[str, ...]:
        """A list of strings, as a tuple."""
        value = self.get(key, list, default=default)
        if not all(isinstance(v, str) for v in value):
            raise BadRecord(f"{self.name}: {key} holds something that is not a string")
        return tuple(value)

    def bad(self, why: str) -> BadRecord:
        """The error for a field that has the right type and a wrong value."""
        return BadRecord(f"{self.name}: {why}")
