"""One mini-batch of a ``run`` frame: load it, call ``run()``, count, write, report.

Every failure the entry script can cause (a loader error, an exception in ``run()``,
a wrong return type, output that cannot be written) becomes a ``failed`` outcome, with
one line of error and the traceback's tail in the outcome and the full traceback in
the worker's error file; the worker then takes the next frame. Only a malformed frame
(``ProtocolError``) or a closed channel ends the worker.

Standard library only, Python 3.7 syntax.
"""

from __future__ import annotations

import os
import time
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from prsd.wire.protocol import ProtocolError
from prsd.wire.records import FAILED, OOM, SUCCEEDED, Outcome, outcome_json
from prsd.worker.appender import AppendFile
from prsd.worker.entry_script import EntryScript
from prsd.worker.loaders import MiniBatchRef, load_mini_batch
from prsd.worker.logs import (
    flush_std_streams,
    one_line_error,
    traceback_tail,
    utc_timestamp,
)
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

    from prsd.wire.hello import Hello
    from prsd.wire.records import MiniBatch
    from prsd.worker.logs import ErrorFile
    from prsd.worker.script import UserScript


class UnsupportedOutput(Exception):
    """The job asks for an append_row format this worker cannot write."""


class Attempt:
    """The outcome being built, field by field: a :class:`prsd.wire.records.Outcome`
    once :meth:`outcome` is called (the one definition of its fields)."""

    def __init__(self, index: int, **fields: Any) -> None:
        unknown = set(fields) - set(_OUTCOME_FIELDS)
        if unknown:
            raise TypeError(f"not fields of an outcome: {sorted(unknown)}")
        object.__setattr__(self, "_fields", {"index": index, "status": FAILED, **fields})

    def __getattr__(self, name: str) -> Any:
        if name not in _OUTCOME_FIELDS:
            raise AttributeError(name)
        default = _OUTCOME_FIELDS[name]
        return self._fields.get(name, dict(default) if isinstance(default, dict) else default)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in _OUTCOME_FIELDS:
            raise AttributeError(f"not a field of an outcome: {name}")
        self._fields[name] = value

    def outcome(self) -> Outcome:
        return Outcome(**self._fields)

    def to_json(self) -> dict[str, Any]:
        """``Outcome.to_json`` of the outcome, made from the fields set (``outcome_json``)."""
        return outcome_json(self._fields)


_BLANK = Outcome(0, FAILED)
_OUTCOME_FIELDS: dict[str, Any] = {f.name: getattr(_BLANK, f.name) for f in fields(Outcome)}


class MiniBatchRunner:
    """Runs mini-batches of one worker; keeps its ``out`` file open between frames."""

    def __init__(
        self,
        hello: Hello,
        script: UserScript,
        errors: ErrorFile,
        on_start: Callable[[int], None],
    ) -> None:
        self.hello = hello
        self.script = script
        self.errors = errors
        self.on_start = on_start  # run() of mini-batch i begins (the worker's board)
        self.out = AppendFile()
        self.pid = os.getpid()  # this worker's, in every outcome

    def handle(self, mb: MiniBatch, out: str | None, close: bool) -> Attempt:
        """Process one mini-batch (``on_start`` as run() begins); return its finished
        attempt (:meth:`Attempt.to_json`: the outcome's JSON; :meth:`Attempt.outcome`).

        Its append_row bytes go to ``out``; ``close``: close that file after it.

        Raises:
            ProtocolError: an append_row job's frame names no out path.
        """
        if self.hello.append_row and not out:
            raise ProtocolError("run frame: append_row needs an out path")
        started_s, cpu_started_s = time.monotonic(), time.process_time()
        attempt = Attempt(
            mb.index,
            items=max(mb.items, 0),
            process_name=self.hello.process_name,
            pid=self.pid,
        )
        try:
            self._process(mb, out, attempt)
        finally:
            if close:
                self.out.close()
        attempt.elapsed_s = time.monotonic() - started_s
        attempt.process_time_s = time.process_time() - cpu_started_s
        return attempt

    def close(self) -> None:
        """Close the ``out`` file (at shutdown)."""
        self.out.close()

    def _process(self, ref: MiniBatch, out: str | None, attempt: Attempt) -> None:
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
            self._account(ref, out, result, attempt)

    def _start(self, ref: MiniBatchRef, attempt: Attempt) -> None:
        self.on_start(ref.index)
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

    def _account(self, ref: MiniBatch, out: str | None, result: Any, attempt: Attempt) -> None:
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
        if self.hello.append_row and out:
            try:
                self._write(out, accepted, attempt, ref.mb_id)
            except ResultTooLarge as exc:
                self._refuse(attempt, ref.mb_id, exc)
                return
            except Exception as exc:  # noqa: BLE001 - to_csv and disk errors fail the mini-batch
                self._fail(attempt, f"writing the output of mini-batch {ref.mb_id}", exc)
                # run() succeeded: say that prsd failed writing what it returned.
                attempt.error = (
                    f"run() returned, but prsd could not write its result to the append_row "
                    f"output ({_writer(accepted)}): {attempt.error}"
                )
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


def _writer(accepted: Any) -> str:
    """What prsd called to write the result (named in the error of a failed write)."""
    return "DataFrame.to_csv" if type(accepted).__name__ == "DataFrame" else "str() of each element"


def _item_count(mini_batch: Any, ref: MiniBatchRef) -> int:
    try:
        return len(mini_batch)
    except TypeError:
        return max(ref.items, 0)
