"""Where a worker's user-facing output goes (docs/logs.md).

- ``print()`` and the root logger: stdout, which the agent points at
  ``logs/user/stdout/<node>/<process>.stdout.txt``; stderr likewise.
- ``EntryScript().logger``: ``logs/user/entry_script_log/<node>/<process>.log.txt`` in
  Azure's format, UTC (set up by :mod:`prsd.worker.entry_script`).
- Full tracebacks of ``init()`` / ``run()`` and stack dumps on SIGUSR1:
  ``logs/user/error/<node>/<process>.txt`` (:class:`ErrorFile`).
"""

from __future__ import annotations

import faulthandler
import logging
import os
import signal
import sys
import time
import traceback
from typing import IO

from prsd.fdio import write_all

TRACEBACK_TAIL_LINES = 6
ROOT_FORMAT = "%(asctime)s|%(levelname)s|%(name)s|%(message)s"
_HOST_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


_last_second: tuple[int, str] = (0, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(0)))


def utc_timestamp(epoch_s: float | None = None) -> str:
    """ISO 8601 UTC with milliseconds: ``2026-07-01T12:00:00.123Z``.

    Every mini-batch's outcome has one: the text of the whole second is made once per
    second (``strftime`` is the costliest step of a mini-batch's bookkeeping after
    ``run()`` slept), one pair swapped at once, so threads may share it."""
    global _last_second
    t = time.time() if epoch_s is None else epoch_s
    second = int(t // 1)
    last = _last_second
    if last[0] != second:
        last = _last_second = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
    return f"{last[1]}.{int((t % 1) * 1000):03d}Z"


def level_number(name: str | int) -> int:
    """``"DEBUG"`` -> 10 (a number is kept); an unknown name -> INFO."""
    if isinstance(name, int):
        return name
    level = logging.getLevelName(name.upper())
    return level if isinstance(level, int) else logging.INFO


def utc_formatter(fmt: str) -> logging.Formatter:
    """A formatter that writes ``asctime`` in UTC."""
    formatter = logging.Formatter(fmt)
    formatter.converter = time.gmtime
    return formatter


def configure_root_logger(level: int) -> None:
    """Root logger -> stdout at ``level`` (replacing handlers a library may have added)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(utc_formatter(ROOT_FORMAT))
    root.addHandler(handler)
    root.setLevel(level)


def line_buffer_std_streams() -> None:
    """Make stdout/stderr flush per line, so prints survive a kill after a timeout."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(line_buffering=True)


def flush_std_streams() -> None:
    """Flush stdout and stderr (a user may have replaced them; never raise)."""
    _flush(sys.stdout)
    _flush(sys.stderr)


def _flush(stream: IO[str] | None) -> None:
    try:
        if stream is not None:
            stream.flush()
    except (OSError, ValueError, AttributeError):
        pass


def one_line_error(exc: BaseException) -> str:
    """``ValueError: bad model path``, whitespace collapsed to one line."""
    try:
        text = " ".join(str(exc).split())
    except Exception:  # noqa: BLE001 - a user exception whose __str__ raises
        text = "<exception str() failed>"
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


def format_traceback(exc: BaseException) -> str:
    """The traceback of ``exc`` as Python prints it, from the user's first frame on.

    The worker host's own frames (and importlib's) before the entry script's code are
    left out: they are the same for every error and push the user's lines out of the
    traceback's tail. An error raised by the host itself keeps its whole traceback.
    """
    tb = exc.__traceback__
    while tb is not None and _is_host_frame(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb or exc.__traceback__))


def _is_host_frame(filename: str) -> bool:
    return filename.startswith((_HOST_DIR, "<frozen importlib"))


def traceback_tail(full: str, lines: int = TRACEBACK_TAIL_LINES) -> str:
    """The last ``lines`` lines of a formatted traceback."""
    return "\n".join(full.rstrip("\n").splitlines()[-lines:])


class ErrorFile:
    """The worker's ``user/error`` file: appended tracebacks and SIGUSR1 stack dumps.

    Opened unbuffered in append mode and kept open for the worker's life:
    ``faulthandler`` writes stack dumps straight to its file descriptor from a C signal
    handler, which works even while ``run()`` is stuck in C code holding the GIL.
    """

    def __init__(self, path: str, process_name: str) -> None:
        self.path = path
        self.process_name = process_name
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        # Open for the worker's life: faulthandler writes to this descriptor.
        self._file: IO[bytes] = open(path, "ab", buffering=0)  # noqa: SIM115
        self.current = ""  # what the worker is doing, named in the dump's trailer

    def write_exception(self, what: str, exc: BaseException) -> str:
        """Append a header line naming ``what`` and the traceback; return the traceback."""
        full = format_traceback(exc)
        self.write_text(f"{self.header(what)}\n{full}\n")
        return full

    def write_text(self, text: str) -> None:
        """Append ``text`` (never raises: losing a log line must not fail a mini-batch)."""
        data = text.encode("utf-8", "backslashreplace")
        try:
            write_all(self._file.fileno(), data)
        except OSError:
            pass

    def dump_stacks_on(self, signum: int) -> None:
        """On ``signum``, dump every thread's stack here, then a line saying what ran."""
        # faulthandler's C handler writes the dump at once (also inside C code) and then
        # chains to this Python handler, which adds context when the interpreter gets
        # back to bytecode (it may never, if the worker is killed first).
        signal.signal(signum, self._after_dump)
        faulthandler.register(signum, file=self._file, all_threads=True, chain=True)

    def _after_dump(self, signum: int, frame: object) -> None:
        doing = self.current or "nothing (between mini-batches)"
        name = signal.Signals(signum).name
        self.write_text(f"{self.header('stack dump above')} {name} while running {doing}\n\n")

    def header(self, what: str) -> str:
        """``<UTC time> <process> (pid N) <what>:`` for an entry of this file."""
        return f"{utc_timestamp()} {self.process_name} (pid {os.getpid()}) {what}:"
