"""The messages of the agent <-> worker channel, one class each, with typed decoders.

The channel's framing (a length prefix, compact JSON) is :mod:`prsd.wire.protocol`;
the first frame, ``hello``, is :class:`prsd.wire.hello.Hello`. After it:

agent -> worker: :class:`Run` (mini-batches of one task to run in order, where their
append_row bytes go, whether the task ends with them), :class:`Shutdown`.

worker -> agent: :class:`Ready` (``init()`` returned; the worker's board, see
:mod:`prsd.wire.board`), :class:`InitFailed`, :class:`Done` (the task ended: every
mini-batch's :class:`~prsd.wire.records.Outcome`, in order), :class:`Skipped` (a task
handed over ahead was withdrawn on the board before it began: none of it ran),
:class:`Bye` (``shutdown()`` finished).

``to_json`` gives a frame's object; :func:`decode_command` and :func:`decode_event`
read one back and raise :class:`~prsd.wire.fields.RecordError` on anything else (an
unknown ``op``/``ev``, a missing field, a wrong type). Standard library only,
Python 3.7.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from prsd.wire.fields import Fields, RecordError
from prsd.wire.records import MiniBatch, Outcome


@dataclass(frozen=True)
class Run:
    """Run ``mbs`` in order; append their append_row bytes to ``out`` (None: summary_only).

    ``last``: the task ends with these (close ``out``, answer :class:`Done`). A task too
    big for one frame comes in several, each but the last with ``last`` false.
    """

    mbs: tuple[MiniBatch, ...]
    out: str | None
    last: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "op": "run",
            "mbs": [mb.to_json() for mb in self.mbs],
            "out": self.out,
            "last": self.last,
        }


@dataclass(frozen=True)
class Shutdown:
    """Call ``shutdown()``, answer :class:`Bye` and exit 0."""

    def to_json(self) -> dict[str, Any]:
        return {"op": "shutdown"}


@dataclass(frozen=True)
class Ready:
    """``init()`` returned; ``board`` is the worker's descriptor of its board."""

    pid: int
    init_s: float
    board: int

    def to_json(self) -> dict[str, Any]:
        return {"ev": "ready", "pid": self.pid, "init_s": self.init_s, "board": self.board}


@dataclass(frozen=True)
class InitFailed:
    error: str
    traceback_tail: str = ""
    error_file: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "ev": "init_failed",
            "error": self.error,
            "traceback_tail": self.traceback_tail,
            "error_file": self.error_file,
        }


@dataclass(frozen=True)
class Done:
    """The task's ``run`` frames are all run: one outcome per mini-batch, in order."""

    outcomes: tuple[Outcome, ...]

    def to_json(self) -> dict[str, Any]:
        return {"ev": "done", "outcomes": [o.to_json() for o in self.outcomes]}


@dataclass(frozen=True)
class Skipped:
    """The task's ``run`` frames were read and none of it ran: it was withdrawn
    (:mod:`prsd.wire.board`) before the worker began it."""

    def to_json(self) -> dict[str, Any]:
        return {"ev": "skipped"}


@dataclass(frozen=True)
class Bye:
    def to_json(self) -> dict[str, Any]:
        return {"ev": "bye"}


Command = Union[Run, Shutdown]
Event = Union[Ready, InitFailed, Done, Skipped, Bye]


def decode_command(obj: Any) -> Command:
    """A frame the agent sent after ``hello``."""
    f = Fields(obj, "frame")
    op = f.get("op", str)
    if op == "run":
        f.record = "run frame"
        return Run(
            tuple(MiniBatch.from_json(mb) for mb in f.get("mbs", list)),
            f.get("out", str, type(None)),
            f.get("last", bool),
        )
    if op == "shutdown":
        return Shutdown()
    raise RecordError(f"unexpected frame {op!r} after hello")


def decode_event(obj: Any) -> Event:
    """A frame the worker sent."""
    f = Fields(obj, "worker frame")
    ev = f.get("ev", str)
    f.record = f"{ev} frame"
    if ev == "done":
        return Done(tuple(Outcome.from_json(o) for o in f.get("outcomes", list)))
    if ev == "ready":
        return Ready(f.get("pid", int), f.get("init_s", float), f.get("board", int))
    if ev == "init_failed":
        return InitFailed(
            f.get("error", str, default="init() failed"),
            f.get("traceback_tail", str, default=""),
            f.get("error_file", str, default=""),
        )
    if ev == "skipped":
        return Skipped()
    if ev == "bye":
        return Bye()
    raise RecordError(f"unknown worker frame {ev!r}")
