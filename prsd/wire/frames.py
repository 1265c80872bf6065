"""The messages of the agent <-> worker channel, one class each, with typed decoders.

The channel's framing (a length prefix, compact JSON) is :mod:`prsd.worker.protocol`;
the first frame, ``hello``, is :class:`prsd.worker.hello.Hello`. After it:

agent -> worker: :class:`Run` (a mini-batch to run, where its append_row bytes go,
whether to close that file after it), :class:`Shutdown`.

worker -> agent: :class:`Ready` (``init()`` returned), :class:`InitFailed`,
:class:`Start` (the mini-batch is loaded, ``run()`` begins), :class:`Done` (its
:class:`~prsd.wire.records.Outcome`), :class:`Bye` (``shutdown()`` finished).

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
    """Run one mini-batch; append its append_row bytes to ``out`` (None: summary_only)."""

    mb: MiniBatch
    out: str | None
    close: bool

    def to_json(self) -> dict[str, Any]:
        return {"op": "run", "mb": self.mb.to_json(), "out": self.out, "close": self.close}


@dataclass(frozen=True)
class Shutdown:
    """Call ``shutdown()``, answer :class:`Bye` and exit 0."""

    def to_json(self) -> dict[str, Any]:
        return {"op": "shutdown"}


@dataclass(frozen=True)
class Ready:
    pid: int
    init_s: float

    def to_json(self) -> dict[str, Any]:
        return {"ev": "ready", "pid": self.pid, "init_s": self.init_s}


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
class Start:
    index: int

    def to_json(self) -> dict[str, Any]:
        return {"ev": "start", "i": self.index}


@dataclass(frozen=True)
class Done:
    outcome: Outcome

    def to_json(self) -> dict[str, Any]:
        return {"ev": "done", "outcome": self.outcome.to_json()}


@dataclass(frozen=True)
class Bye:
    def to_json(self) -> dict[str, Any]:
        return {"ev": "bye"}


Command = Union[Run, Shutdown]
Event = Union[Ready, InitFailed, Start, Done, Bye]


def decode_command(obj: Any) -> Command:
    """A frame the agent sent after ``hello``."""
    f = Fields(obj, "frame")
    op = f.get("op", str)
    if op == "run":
        f.record = "run frame"
        return Run(
            MiniBatch.from_json(f.get("mb", dict)),
            f.get("out", str, type(None)),
            f.get("close", bool, default=False),
        )
    if op == "shutdown":
        return Shutdown()
    raise RecordError(f"unexpected frame {op!r} after hello")


def decode_event(obj: Any) -> Event:
    """A frame the worker sent."""
    f = Fields(obj, "worker frame")
    ev = f.get("ev", str)
    f.record = f"{ev} frame"
    if ev == "start":
        return Start(f.get("i", int))
    if ev == "done":
        return Done(Outcome.from_json(f.get("outcome", dict)))
    if ev == "ready":
        return Ready(f.get("pid", int), f.get("init_s", float))
    if ev == "init_failed":
        return InitFailed(
            f.get("error", str, default="init() failed"),
            f.get("traceback_tail", str, default=""),
            f.get("error_file", str, default=""),
        )
    if ev == "bye":
        return Bye()
    raise RecordError(f"unknown worker frame {ev!r}")
