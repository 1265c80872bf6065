"""The ``hello`` frame: a worker's whole configuration, built by the agent, read by the worker.

Both sides use :class:`Hello`, so a key the agent forgets or mistypes is caught when
the agent builds the frame (``ValueError``), not by a worker that exits with
``EXIT_PROTOCOL_ERROR``. Keys a worker does not know are ignored (an older worker under
a newer agent); keys with a default may be left out.

Standard library only, Python 3.7 syntax: workers import this under the job's
interpreter.
"""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any

from prsd.wire.protocol import ProtocolError

_BOOL_KEYS = ("dataframe_header",)
_DICT_KEYS = ("to_csv", "config")
_INT_KEYS = ("max_result_rows", "max_result_bytes")


@dataclass(frozen=True)
class Hello:
    """What a worker needs to know before it imports the entry script.

    Paths are absolute. See ``prsd.wire.protocol.HELLO_KEYS`` for one line on each
    (a unit test keeps the two in step).
    """

    job_id: str
    node_id: str
    process_name: str
    code_dir: str
    entry_script: str
    working_dir: str
    output_dir: str
    log_dir: str
    entry_log_file: str
    error_file: str
    kind: str
    output_action: str
    argv: list[str] = field(default_factory=list)
    logging_level: str = "INFO"
    append_row_format: str = "text"
    to_csv: dict[str, Any] = field(default_factory=dict)
    dataframe_header: bool = False
    profiling_module: str = ""
    profile_file: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    max_result_rows: int = 10_000_000  # same defaults as prsd.tunables
    max_result_bytes: int = 256 * 1024**2

    @property
    def append_row(self) -> bool:
        """True when the returned elements are written (not only counted)."""
        return self.output_action == "append_row"

    def to_message(self) -> dict[str, Any]:
        """The frame the agent sends first (a JSON object with ``op: hello``).

        Raises:
            ValueError: a field has the wrong type (checked as the worker will).
        """
        message: dict[str, Any] = {"op": "hello"}
        message.update(asdict(self))
        try:
            Hello.from_message(message)
        except ProtocolError as exc:
            raise ValueError(str(exc)) from exc
        return message

    @classmethod
    def from_message(cls, message: dict[str, Any] | None) -> Hello:
        """Read the first frame a worker receives.

        Raises:
            ProtocolError: it is not a ``hello``, a required key is missing, or a
                value has the wrong type.
        """
        if message is None or message.get("op") != "hello":
            raise ProtocolError(f"expected a hello frame first, got {_describe(message)}")
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name in message:
                values[f.name] = _checked(f.name, message[f.name])
        missing = [f.name for f in fields(cls) if f.name not in values and not _has_default(f.name)]
        if missing:
            raise ProtocolError(f"hello frame lacks {', '.join(missing)}")
        return cls(**values)


def _describe(message: dict[str, Any] | None) -> str:
    if message is None:
        return "end of channel"
    return repr(message.get("op", message.get("ev", "a frame without op")))


def _has_default(name: str) -> bool:
    return name in _DEFAULTED


def _checked(name: str, value: Any) -> Any:
    if name == "argv":
        if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
            raise ProtocolError("hello argv must be a list of strings")
        return list(value)
    if name in _INT_KEYS:
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ProtocolError(f"hello {name} must be a positive int, not {value!r}")
        return value
    if name in _BOOL_KEYS:
        expected: type = bool
    elif name in _DICT_KEYS:
        expected = dict
    else:
        expected = str
    if not isinstance(value, expected):
        raise ProtocolError(f"hello {name} must be a {expected.__name__}, not {value!r}")
    return value


_DEFAULTED = frozenset(
    f.name for f in fields(Hello) if f.default is not MISSING or f.default_factory is not MISSING
)
