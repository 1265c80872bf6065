"""The job's plan as the leader receives it: from the owner's planner, never blocking.

:func:`open_plan` starts one planner per job: under a root daemon, for a job owned
by someone else, a process with the owner's ids (:mod:`prsd.leader.plan.planhelper`)
whose records arrive on a pipe (:class:`HelperPlan`); otherwise the same planning
code in this process (:class:`InProcessPlan`). Both answer :meth:`pull`: up to
``n`` mini-batches that have arrived, waiting at most ``wait_s`` for more, so a
slow input (or grouping a big table) never holds the leader's thread.

The planner's records are not trusted beyond their format: it runs with the owner's
ids, and the owner may signal or trace their own processes. So a record is only ever
what the owner could have planned anyway (names of files they can read); a
mini-batch out of sequence fails the job.

Promise: the mini-batches come in the planner's order, exactly once; skip reports
go to ``on_skip`` and a retry's order to ``on_order`` as they arrive; after
:meth:`close` no planner process is left running (killed and reaped).

Errors: :class:`~prsd.errors.InputError` from :meth:`pull` when the plan failed
(the planner's own one-line reason), a record is malformed or out of sequence, the
planner died or ended without finishing
(its exit and the end of its stderr), or sent nothing at all (not even its
``alive`` tick) for ``silence_s`` seconds (it is then killed).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Protocol

from prsd.asowner.spawn import spawn_as
from prsd.errors import InputError
from prsd.leader.plan.planhelper import MODULE, encode_request, planned_batches
from prsd.leader.plan.planowner import plan_identity, private_folders
from prsd.leader.plan.planwire import RecordReader
from prsd.leader.rerun.retryjob import load_retry, write_order
from prsd.spool.retryrecords import RetryOrder

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from prsd.jobspec import JobSpec
    from prsd.leader.plan.planwire import Record
    from prsd.owner import RunAs
    from prsd.spool.layout import JobLayout
    from prsd.wire.records import MiniBatch

SILENCE_S = 120.0  # the helper ticks every planhelper.ALIVE_S; this long without: stuck
SILENCE_ENV = "PRSD_PLAN_SILENCE_S"
READ_BYTES = 1 << 20
STDERR_KEPT = 2000
REAP_S = 2.0


class PlanSource(Protocol):
    """The job's mini-batches as they become available."""

    @property
    def ended(self) -> bool: ...

    def pull(self, n: int, wait_s: float) -> list[MiniBatch]: ...

    def close(self) -> None: ...


def silence_s() -> float:
    """``PRSD_PLAN_SILENCE_S`` (seconds, > 0), else :data:`SILENCE_S`."""
    try:
        value = float(os.environ.get(SILENCE_ENV, "") or SILENCE_S)
    except ValueError:
        return SILENCE_S
    return value if value > 0 else SILENCE_S


def open_plan(spec: JobSpec, layout: JobLayout, on_skip: Callable[[str, str], None]) -> PlanSource:
    """Start planning the job: its owner's process, or this one (see the module doc).

    Raises:
        InputError: no valid owner record, the retry's files cannot be used, the
            planner's folders cannot be made, or the planner cannot start.
    """
    run_as = plan_identity(layout)
    retry = load_retry(layout)
    private_folders(layout, run_as)
    if run_as is None:
        mbs = planned_batches(spec, layout.root, retry, on_skip, lambda o: write_order(layout, o))
        return InProcessPlan(mbs, spec.input.name)
    request = encode_request(spec, layout.root, retry)
    return HelperPlan.start(
        run_as,
        request,
        on_skip=on_skip,
        on_order=lambda o: write_order(layout, o),
        name=spec.input.name,
    )


class InProcessPlan:
    """The planner's generator, run in the leader's thread (the daemon is the owner)."""

    def __init__(self, mbs: Iterator[MiniBatch], name: str) -> None:
        self._mbs = mbs
        self._name = name
        self._ended = False

    @property
    def ended(self) -> bool:
        return self._ended

    def pull(self, n: int, wait_s: float) -> list[MiniBatch]:
        out: list[MiniBatch] = []
        try:
            while len(out) < n and not self._ended:
                mb = next(self._mbs, None)
                if mb is None:
                    self._ended = True
                else:
                    out.append(mb)
        except OSError as exc:
            raise InputError(f"cannot read input {self._name}: {exc}") from exc
        return out

    def close(self) -> None:
        close = getattr(self._mbs, "close", None)
        if close is not None:
            close()


class HelperPlan:
    """A planner process's records, read without blocking."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        *,
        on_skip: Callable[[str, str], None],
        on_order: Callable[[RetryOrder], None],
        name: str,
        who: str,
        silence: float | None = None,
    ) -> None:
        assert proc.stdout is not None and proc.stderr is not None
        self.proc = proc
        self._out = proc.stdout.fileno()
        self._err = proc.stderr.fileno()
        os.set_blocking(self._out, False)
        os.set_blocking(self._err, False)
        self._reader = RecordReader()
        self._arrived: deque[MiniBatch] = deque()
        self._on_skip, self._on_order = on_skip, on_order
        self._name, self._who = name, who
        self._silence = silence_s() if silence is None else silence
        self._heard = time.monotonic()
        self._stderr = b""
        self._next = 0  # the index the next mini-batch must have
        self._complete = False  # "end" received
        self._eof = False
        self._failed: InputError | None = None

    @classmethod
    def start(
        cls,
        run_as: RunAs | None,
        request: bytes,
        *,
        on_skip: Callable[[str, str], None],
        on_order: Callable[[RetryOrder], None],
        name: str,
        silence: float | None = None,
    ) -> HelperPlan:
        """Spawn the planner as ``run_as`` (None: this process's ids) and send it ``request``.

        Raises:
            InputError: the process cannot be started.
        """
        who = "this daemon's user" if run_as is None else f"{run_as.name} (uid {run_as.uid})"
        try:
            proc = spawn_as(
                run_as,
                MODULE,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise InputError(f"the input planner cannot be started as {who}: {exc}") from exc
        threading.Thread(target=_feed, args=(proc, request), daemon=True).start()
        return cls(proc, on_skip=on_skip, on_order=on_order, name=name, who=who, silence=silence)

    @property
    def ended(self) -> bool:
        return self._complete and not self._arrived

    def pull(self, n: int, wait_s: float) -> list[MiniBatch]:
        """Up to ``n`` mini-batches that arrived, waiting at most ``wait_s`` for them.

        Raises:
            InputError: the plan failed, the planner died, or it went silent.
        """
        deadline = time.monotonic() + max(wait_s, 0.0)
        out: list[MiniBatch] = []
        while True:
            while self._arrived and len(out) < n:
                out.append(self._arrived.popleft())
            if len(out) >= n or self._complete:
                return out
            if self._failed is not None:
                raise self._failed
            if self._eof:
                raise self._died()
            self._read(max(deadline - time.monotonic(), 0.0))
            if self._failed is None and not self._eof and time.monotonic() >= deadline:
                while self._arrived and len(out) < n:
                    out.append(self._arrived.popleft())
                self._check_silence()
                return out

    def _read(self, wait_s: float) -> None:
        fds = [self._out, self._err]
        ready, _, _ = select.select(fds, [], [], wait_s)
        if self._err in ready:
            self._read_err()
        if self._out not in ready:
            return
        try:
            data = os.read(self._out, READ_BYTES)
        except BlockingIOError:
            return
        if not data:
            self._eof = True
            self._read_err()
            if self._complete:
                _reap(self.proc)  # it is exiting: no zombie until the job ends
            return
        self._heard = time.monotonic()
        for record in self._reader.feed(data):
            self._take(record)

    def _take(self, record: Record) -> None:
        if self._complete or self._failed is not None:
            return
        if record.kind == "mb" and record.mb is not None:
            if record.mb.index != self._next:  # the planner numbers 0, 1, 2... always
                self._failed = InputError(
                    f"the input planner of {self._name} sent mini-batch {record.mb.index} "
                    f"where {self._next} was due"
                )
                return
            self._next += 1
            self._arrived.append(record.mb)
        elif record.kind == "skip":
            self._on_skip(record.path, record.why)
        elif record.kind == "order" and record.order is not None:
            self._on_order(RetryOrder.decode(_json(record.order)))
        elif record.kind == "error":
            self._failed = InputError(record.msg)
        elif record.kind == "end":
            self._complete = True

    def _read_err(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            data = os.read(self._err, READ_BYTES)
            self._stderr = (self._stderr + data)[-STDERR_KEPT:]

    def _check_silence(self) -> None:
        quiet = time.monotonic() - self._heard
        if quiet > self._silence:
            self.close()
            raise InputError(
                f"the input planner of {self._name} (run as {self._who}) sent nothing for "
                f"{quiet:.0f} s and was stopped"
            )

    def _died(self) -> InputError:
        code = _reap(self.proc)
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit {code}"
        tail = self._stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        said = f": {' | '.join(tail)}" if tail else ""
        return InputError(
            f"the input planner of {self._name} (run as {self._who}) ended before its plan "
            f"was complete ({how}){said}"
        )

    def close(self) -> None:
        """Stop the planner (if still running) and reap it; the pipes are closed.

        A planner that sent its last record (``end`` or ``error``) is given a moment
        to exit on its own first.
        """
        if self._complete or self._failed is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(REAP_S)
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.send_signal(signal.SIGKILL)
        _reap(self.proc)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def _feed(proc: subprocess.Popen[bytes], request: bytes) -> None:
    """(Its own thread.) Write the request and close stdin; a planner gone is no error."""
    assert proc.stdin is not None
    with contextlib.suppress(OSError):
        proc.stdin.write(request)
    with contextlib.suppress(OSError):
        proc.stdin.close()


def _reap(proc: subprocess.Popen[bytes]) -> int | None:
    try:
        return proc.wait(REAP_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            proc.kill()
        try:
            return proc.wait(REAP_S)
        except subprocess.TimeoutExpired:
            return None


def _json(obj: object) -> bytes:
    return json.dumps(obj).encode()
