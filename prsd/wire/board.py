"""The worker's board: where a worker says, without waking the agent, what it is doing.

A worker runs a whole task on one ``run`` frame and answers one ``done`` frame with
every outcome. Between the two, the agent still has to know when the current
mini-batch began loading or began ``run()`` (its clocks, docs/supervision.md) and,
if the worker dies or is killed, which outcomes it already had. The board holds
both, in a memory file (``memfd``) the worker creates; the agent opens its own
descriptor of it (``/proc/<pid>/fd/<n>``, named in the ``ready`` frame) and reads it
only when a clock runs out, when the worker dies, and in the memory watch's
samples. Writing it costs the worker two ``pwrite`` calls per mini-batch and the
agent nothing.

Layout: the mark at offset 0 (:data:`MARK`: a sequence number, the mini-batch's
index, its phase (:data:`RUNNING`: its ``run()`` began; :data:`FINISHED`: it is
journaled and the next one loads), the ``time.monotonic()`` it entered that phase, the sequence number
again); at :data:`WITHDRAWN_AT`, one byte the agent sets to withdraw a task it handed
over ahead (below); from :data:`JOURNAL_AT`, one compact JSON line per finished
mini-batch's outcome, in order. ``CLOCK_MONOTONIC`` is one clock for every process of a machine,
so the worker's times are the agent's.

Promise: a mark is read whole or not at all (the two sequence numbers differ while
it is being written: the reader tries again); a journal line is used only once its
newline is written, so a worker that dies inside a write loses only the outcome it
was writing (its mini-batch is then the one in hand, as before the write). The agent
empties the board before it hands a task to an idle worker; a task handed to a busy
worker, ahead of its end (prsd.agent.ahead), finds the last task's journal, which the
worker cuts as it begins the task, before its first line.

Withdrawal: before it begins a task, the worker reads the withdrawal byte; set, it
does not begin the task (it answers ``skipped``, :mod:`prsd.wire.frames`). The agent
sets it when a task it handed over ahead must not begin (a drain, a slot cap): if
the worker read the byte first, it begins the task and the agent collects it as any
other; either way the task runs once or not at all. Emptying the board clears it.

Errors: ``OSError`` from the file calls (a board that cannot be created or read).
Standard library only, Python 3.9 syntax: the worker's half runs under the job's
interpreter.
"""

from __future__ import annotations

import json
import os
import struct
import tempfile
from typing import Any, NamedTuple

MARK = struct.Struct("<Iqid4xI")
WITHDRAWN_AT = MARK.size  # one byte: nonzero, the next task to begin is withdrawn
JOURNAL_AT = 64
RUNNING = 1  # run() of the mark's mini-batch began
FINISHED = 2  # the mark's mini-batch finished (its outcome is journaled): the next loads
_READ_TRIES = 100
_ENCODE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


class Mark(NamedTuple):
    """What the worker last said it was doing."""

    mb: int  # the mini-batch's index
    phase: int  # RUNNING or FINISHED
    since: float  # time.monotonic() when it entered the phase


class Board:
    """One worker's board, either end (the worker writes, the agent reads and empties)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._seq = 0
        self._end = JOURNAL_AT

    @classmethod
    def create(cls) -> Board:
        """The worker's new board (not inherited by programs the entry script starts).

        Raises:
            OSError: no memory file could be made.
        """
        make = getattr(os, "memfd_create", None)  # Python 3.8 and later
        if make is not None:
            return cls(make("prsd-board", 1))  # 1: MFD_CLOEXEC
        fd, path = tempfile.mkstemp(prefix="prsd-board-")  # 3.7: an unlinked file instead
        os.unlink(path)
        return cls(fd)

    @classmethod
    def open_of(cls, pid: int, fd: int) -> Board:
        """The agent's descriptor of worker ``pid``'s board ``fd``.

        Raises:
            OSError: the worker is gone, or the descriptor is not open.
        """
        return cls(os.open(f"/proc/{pid}/fd/{fd}", os.O_RDWR | os.O_CLOEXEC))

    def close(self) -> None:
        os.close(self.fd)

    # --- the worker's half --------------------------------------------------------------

    def mark(self, index: int, phase: int, since: float) -> None:
        """Say that mini-batch ``index`` entered ``phase`` at ``since``."""
        self._seq = (self._seq + 1) & 0xFFFFFFFF
        os.pwrite(self.fd, MARK.pack(self._seq, index, phase, since, self._seq), 0)

    def begin_task(self) -> None:
        """A new task: its journal starts at :data:`JOURNAL_AT`, the last task's lines cut
        (a task handed over ahead finds them; an idle worker's board the agent emptied).
        The mark stays: the last task's final mini-batch finished, this one's first loads."""
        self._end = JOURNAL_AT
        if os.fstat(self.fd).st_size > JOURNAL_AT:
            os.ftruncate(self.fd, JOURNAL_AT)

    def withdrawn(self) -> bool:
        """Has the agent withdrawn the task this worker is about to begin?"""
        return os.pread(self.fd, 1, WITHDRAWN_AT) not in (b"", b"\x00")

    def journal(self, outcome: dict[str, Any]) -> bytes:
        """Append one finished mini-batch's outcome (its JSON object); return its JSON
        text (without the newline), which the ``done`` frame reuses."""
        text = _ENCODE(outcome).encode()
        os.pwrite(self.fd, text + b"\n", self._end)
        self._end += len(text) + 1
        return text

    # --- the agent's half ---------------------------------------------------------------

    def empty(self) -> None:
        """Forget the last task's mark and journal (before the next task is handed over)."""
        os.ftruncate(self.fd, 0)

    def withdraw(self, *, on: bool = True) -> None:
        """Withdraw (or, ``on`` false, no longer withdraw) the task the worker begins next."""
        os.pwrite(self.fd, b"\x01" if on else b"\x00", WITHDRAWN_AT)

    def read_mark(self) -> Mark | None:
        """The worker's last mark; None before its first of this task."""
        for _ in range(_READ_TRIES):
            data = os.pread(self.fd, MARK.size, 0)
            if len(data) < MARK.size:
                return None
            seq, index, phase, since, seq_again = MARK.unpack(data)
            # Read twice alike and framed by one sequence number: not a write in flight.
            if seq == seq_again and os.pread(self.fd, MARK.size, 0) == data:
                return None if seq == 0 else Mark(index, phase, since)
        return None

    def read_journal(self) -> list[dict[str, Any]]:
        """The outcomes journaled since the board was emptied, in order (whole lines only).

        Raises:
            ValueError: a whole line is not JSON (a worker that wrote garbage).
        """
        size = os.fstat(self.fd).st_size
        if size <= JOURNAL_AT:
            return []
        data = os.pread(self.fd, size - JOURNAL_AT, JOURNAL_AT)
        whole = data[: data.rfind(b"\n") + 1]
        found: list[dict[str, Any]] = []
        for line in whole.splitlines():
            obj = json.loads(line)
            if isinstance(obj, dict):  # anything else is checked as an outcome, and fails
                found.append(obj)
        return found
