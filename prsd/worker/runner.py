"""One ``run`` frame: load the mini-batch, call ``run()``, count, write, report.

Every failure the entry script can cause (a loader error, an exception in ``run()``,
a wrong return type, output that cannot be written) becomes a ``failed`` outcome, with
one line of error and the traceback's tail in the outcome and the full traceback in
the worker's error file; the worker then takes the next frame. Only a malformed frame
(``ProtocolError``) or a closed channel ends the worker.

Standard library only, Python 3.9 syntax.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from prsd.worker.appender import AppendFile
from prsd.worker.entry_script import EntryScript
from prsd.worker.loaders import MiniBatchRef, load_mini_batch
from prsd.worker.logs import (
    flush_std_streams,
    one_line_error,
    traceback_tail,
    utc_timestamp,
)
from prsd.worker.protocol import ProtocolError
from prsd.worker.results import (
    ItemCounts,
    ResultTooLarge,
    WrongResultType,
    accepted_result,
    check_bytes,
    check_rows,
    encode_output,
    too_many_warning,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from prsd.worker.hello import Hello
    from prsd.worker.logs import ErrorFile
    from prsd.worker.script import UserScript

SUCCEEDED = "succeeded"  # the statuses of prsd.storage.records
FAILED = "failed"
OOM = "oom"


class UnsupportedOutput(Exception):
    """The job asks for an append_row format this worker cannot write."""


@dataclass
class Attempt:
    """The outcome being built; its JSON is ``prsd.storage.records.Outcome``'s."""

    index: int
    status: str = FAILED
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
        """Like ``Outcome.to_json``: empty fields left out, index and status always in."""
        obj = {k: v for k, v in asdict(self).items() if v not in ("", 0, 0.0, {})}
        obj.update(index=self.index, status=self.status)
        return obj


@dataclass(frozen=True)
class RunFrame:
    """A parsed ``run`` frame."""

    ref: MiniBatchRef
    out: str | None
    close: bool

    @classmethod
    def parse(cls, frame: dict[str, Any], needs_out: bool) -> RunFrame:
        """Read a ``run`` frame.

        Raises:
            ProtocolError: a field is missing or has the wrong type.
        """
        ref = MiniBatchRef.from_json(frame.get("mb"))
        out = frame.get("out")
        close = frame.get("close", False)
        if not (out is None or isinstance(out, str)) or not isinstance(close, bool):
            raise ProtocolError("run frame: out must be a path or null, close a bool")
        if needs_out and not out:
            raise ProtocolError("run frame: append_row needs an out path")
        return cls(ref, out, close)


class MiniBatchRunner:
    """Runs mini-batches of one worker; keeps its ``out`` file open between frames."""

    def __init__(
        self,
        hello: Hello,
        script: UserScript,
        errors: ErrorFile,
        send: Callable[[dict[str, Any]], None],
    ) -> None:
        self.hello = hello
        self.script = script
        self.errors = errors
        self.send = send
        self.out = AppendFile()

    def handle(self, frame: dict[str, Any]) -> dict[str, Any]:
        """Process one ``run`` frame (sending ``start``); return the outcome JSON.

        Raises:
            ProtocolError: the frame is malformed.
        """
        run = RunFrame.parse(frame, self.hello.append_row)
        started_s, cpu_started_s = time.monotonic(), time.process_time()
        attempt = Attempt(
            run.ref.index,
            items=max(run.ref.items, 0),
            process_name=self.hello.process_name,
            pid=os.getpid(),
        )
        try:
            self._process(run, attempt)
        finally:
            if run.close:
                self.out.close()
        attempt.elapsed_s = time.monotonic() - started_s
        attempt.process_time_s = time.process_time() - cpu_started_s
        return attempt.to_json()

    def close(self) -> None:
        """Close the ``out`` file (at shutdown)."""
        self.out.close()

    def _process(self, run: RunFrame, attempt: Attempt) -> None:
        ref = run.ref
        try:
            self._check_output_format()
            mini_batch = load_mini_batch(self.hello.kind, ref, self.hello.config)
        except Exception as exc:  # noqa: BLE001 - the loader fails only this mini-batch
            self._start(ref, attempt)
            self._fail(attempt, f"loading mini-batch {ref.mb_id}", exc)
            return
        attempt.items = _item_count(mini_batch, ref)
        self._start(ref, attempt)
        called, result = self._call_run(mini_batch, ref, attempt)
        if called:
            self._account(run, result, attempt)

    def _start(self, ref: MiniBatchRef, attempt: Attempt) -> None:
        self.send({"ev": "start", "i": ref.index})
        attempt.start_time = utc_timestamp()

    def _call_run(self, mini_batch: Any, ref: MiniBatchRef, attempt: Attempt) -> tuple[bool, Any]:
        self.errors.current = f"run() on mini-batch {ref.mb_id}"
        called_s = time.monotonic()
        try:
            return True, self.script.run(mini_batch, ref)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - user code fails the mini-batch
            self._fail(attempt, f"run() on mini-batch {ref.mb_id}", exc)
            return False, None
        finally:
            attempt.run_method_s = time.monotonic() - called_s
            self.errors.current = ""
            # Prints must reach the log file even if this worker is killed later.
            flush_std_streams()

    def _account(self, run: RunFrame, result: Any, attempt: Attempt) -> None:
        ref = run.ref
        try:
            accepted = accepted_result(result, ref.mb_id)
            check_rows(len(accepted), self.hello.max_result_rows, ref.mb_id)
        except WrongResultType as exc:
            self._refuse(attempt, ref.mb_id, exc)
            return
        counts = ItemCounts(attempt.items, len(accepted))
        attempt.succeeded_items, attempt.failed_items = counts.succeeded, counts.failed
        if counts.too_many:
            warning = too_many_warning(counts, ref.mb_id)
            attempt.extra = {"returned_items": counts.returned, "warning": warning}
            EntryScript().logger.warning(warning)
        if self.hello.append_row and run.out:
            try:
                self._write(run.out, accepted, attempt, ref.mb_id)
            except ResultTooLarge as exc:
                self._refuse(attempt, ref.mb_id, exc)
                return
            except Exception as exc:  # noqa: BLE001 - to_csv and disk errors fail the mini-batch
                self._fail(attempt, f"writing the output of mini-batch {ref.mb_id}", exc)
                return
        attempt.status = SUCCEEDED

    def _refuse(self, attempt: Attempt, mb_id: str, exc: WrongResultType) -> None:
        """Fail the attempt for what run() returned (its type, or its size over a cap)."""
        attempt.error = str(exc)
        attempt.succeeded_items = 0
        attempt.failed_items = attempt.items
        attempt.error_file = self.errors.path
        what = self.errors.header(f"run() on mini-batch {mb_id}")
        self.errors.write_text(f"{what} {exc}\n\n")

    def _write(self, out: str, accepted: Any, attempt: Attempt, mb_id: str) -> None:
        data, header = encode_output(
            self.hello.append_row_format, accepted, self.hello.to_csv, self.hello.dataframe_header
        )
        check_bytes(len(data), self.hello.max_result_bytes, mb_id)
        attempt.offset, attempt.length = self.out.append(out, data)
        attempt.header = header

    def _check_output_format(self) -> None:
        fmt = self.hello.append_row_format
        if self.hello.append_row and fmt not in ("text", "parquet"):
            raise UnsupportedOutput(
                f"append_row_format {fmt!r} is not supported by this worker yet"
            )

    def _fail(self, attempt: Attempt, what: str, exc: BaseException) -> None:
        full = self.errors.write_exception(what, exc)
        # MemoryError: the allocation hit the worker's limit (RLIMIT_AS, a cgroup):
        # evidence enough to call the attempt out of memory.
        attempt.status = OOM if isinstance(exc, MemoryError) else FAILED
        attempt.succeeded_items = 0
        attempt.failed_items = attempt.items
        attempt.error = one_line_error(exc)
        attempt.traceback_tail = traceback_tail(full)
        attempt.error_file = self.errors.path


def _item_count(mini_batch: Any, ref: MiniBatchRef) -> int:
    try:
        return len(mini_batch)
    except TypeError:
        return max(ref.items, 0)
