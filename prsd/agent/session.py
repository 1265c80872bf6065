"""One worker's life: start, wait for init, run mini-batches under timeouts, stop.

The session enforces the per-mini-batch clocks (SPEC section 4 and 7):

- ``task_overhead_timeout``: from handing a mini-batch over (or finishing the one
  before it) until the worker says ``start`` (loading the mini-batch);
- ``retry_settings.timeout``: from ``start`` until ``done`` (the ``run()`` call).

A mini-batch that runs out of time gets its Python stacks dumped (SIGUSR1 ->
faulthandler in the worker, into ``user/error/<node>/<process>.txt``) before the
stop ladder ends the worker. A worker that dies (segfault, ``os._exit``, the OOM
killer) fails only the mini-batch it was running.
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio

from prsd.agent.nodelog import append_line, batch_record
from prsd.agent.proc import BrokenWorker, ExitInfo, WorkerProcess, spawn_worker
from prsd.agent.verdicts import classify_exit
from prsd.storage.layout import mb_id, process_name
from prsd.storage.records import TIMEOUT, Outcome
from prsd.worker.launch import worker_command

if TYPE_CHECKING:
    from collections.abc import Callable

    from anyio.abc import TaskGroup

    from prsd.agent.context import JobContext, ProcessPaths
    from prsd.agent.task import RunningTask

STACK_DUMP_WAIT_S = 0.3
STOP_GRACE_S = 5.0


@dataclass(frozen=True)
class InitResult:
    ok: bool
    error: str = ""
    traceback_tail: str = ""
    error_file: str = ""
    init_s: float = 0.0


class WorkerSession:
    """A worker process of one job on this node."""

    def __init__(
        self, ctx: JobContext, number: int, gpu: int | None, *, ip: str, stop_grace_s: float
    ) -> None:
        self.ctx = ctx
        self.number = number
        self.name = process_name(number)
        self.gpu = gpu
        self.ip = ip
        self.stop_grace_s = stop_grace_s
        self.paths: ProcessPaths = ctx.process_paths(number)
        self.proc: WorkerProcess | None = None
        self.busy = False
        self.current_task = ""

    def main_log(self, line: str) -> None:
        append_line(self.ctx.main_log(), line)

    async def start(self, tg: TaskGroup) -> None:
        """Spawn the worker, watch its process in ``tg``, and send its configuration."""
        ctx = self.ctx
        self.paths.working_dir.mkdir(parents=True, exist_ok=True)
        python = ctx.spec.python

        def command(fd: int) -> list[str]:
            return worker_command(python, fd)

        self.proc = await spawn_worker(
            command,
            env=ctx.env(self.gpu),
            cwd=self.paths.working_dir,
            stdout_path=self.paths.stdout,
            stderr_path=self.paths.stderr,
        )
        tg.start_soon(self.proc.watch)
        gpu = f", CUDA_VISIBLE_DEVICES={self.gpu}" if self.gpu is not None else ""
        self.main_log(f"{self.name} started (pid {self.proc.pid}{gpu})")
        await self.proc.send(ctx.hello(self.number, self.paths))

    async def wait_ready(self, deadline_s: float) -> InitResult:
        """Wait for ``init()`` to finish; a failure or a timeout stops the worker."""
        proc = self._proc()
        began = time.monotonic()
        msg: dict[str, Any] | None = None
        with anyio.move_on_after(deadline_s):
            try:
                msg = await proc.receive()
            except BrokenWorker:
                msg = {"ev": "died"}
        if msg is not None and msg.get("ev") == "ready":
            init_s = float(msg.get("init_s", time.monotonic() - began))
            self.main_log(f"{self.name} ready: init() took {init_s:.3f} s")
            return InitResult(True, init_s=init_s)
        if msg is None:
            result = InitResult(False, f"init() did not finish within {deadline_s:g} s")
            await self.dump_stacks()
        elif msg.get("ev") == "init_failed":
            result = InitResult(
                False,
                str(msg.get("error", "init() failed")),
                str(msg.get("traceback_tail", "")),
                str(msg.get("error_file", "")),
            )
        else:
            result = InitResult(False, "the worker died during init()")
        exit_info = await self.stop()
        if msg is not None and msg.get("ev") == "died":
            result = InitResult(False, f"{exit_info.describe(self.name)} during init()")
        return result

    async def run_task(self, task: RunningTask, on_done: Callable[[Outcome], None]) -> bool:
        """Run the task's remaining mini-batches; False if the worker died or was stopped."""
        proc = self._proc()
        remaining = task.remaining()
        self.busy = True
        self.current_task = task.task.name
        try:
            for k, mb in enumerate(remaining):
                await proc.send(
                    {
                        "op": "run",
                        "mb": mb,
                        "out": str(task.out_tmp),
                        "close": k == len(remaining) - 1,
                    }
                )
        except BrokenWorker:
            await self._died(task, remaining[0], None, on_done)
            return False
        try:
            return await self._collect(task, remaining, on_done)
        finally:
            self.busy = False
            self.current_task = ""

    async def _collect(
        self, task: RunningTask, remaining: list[dict[str, Any]], on_done: Callable[[Outcome], None]
    ) -> bool:
        proc = self._proc()
        spec = self.ctx.spec
        pending = list(remaining)
        started: float | None = None
        phase = time.monotonic()
        while pending:
            limit = spec.timeout_s if started is not None else spec.task_overhead_timeout_s
            wait_s = max(
                0.0, (started if started is not None else phase) + limit - time.monotonic()
            )
            msg: dict[str, Any] | None = None
            with anyio.move_on_after(wait_s):
                try:
                    msg = await proc.receive()
                except BrokenWorker:
                    await self._died(task, pending[0], started, on_done)
                    return False
            if msg is None:
                await self._timed_out(task, pending[0], started, on_done)
                return False
            if msg.get("ev") == "start":
                started = time.monotonic()
            elif msg.get("ev") == "done":
                outcome = Outcome.from_json(msg["outcome"])
                task.outcomes[outcome.index] = outcome
                pending = [mb for mb in pending if int(mb["i"]) != outcome.index]
                on_done(outcome)
                started = None
                phase = time.monotonic()
        return True

    async def _timed_out(
        self,
        task: RunningTask,
        mb: dict[str, Any],
        started: float | None,
        on_done: Callable[[Outcome], None],
    ) -> None:
        spec = self.ctx.spec
        index = int(mb["i"])
        if started is not None:
            error = (
                f"run() on mini-batch {mb_id(index)} did not return within {spec.timeout_s:g} s "
                f"(retry_settings.timeout); its stacks are in {self.paths.error}"
            )
        else:
            error = (
                f"loading mini-batch {mb_id(index)} took longer than "
                f"{spec.task_overhead_timeout_s:g} s (task_overhead_timeout)"
            )
        await self.dump_stacks()
        exit_info = await self.stop()
        self.main_log(f"{exit_info.describe(self.name)}: {error}")
        outcome = self._failure(mb, TIMEOUT, error, started)
        task.outcomes[index] = outcome
        on_done(outcome)

    async def _died(
        self,
        task: RunningTask,
        mb: dict[str, Any],
        started: float | None,
        on_done: Callable[[Outcome], None],
    ) -> None:
        proc = self._proc()
        with anyio.move_on_after(self.stop_grace_s):
            await proc.wait_exit()
        exit_info = await self.stop()
        status = classify_exit(exit_info, timed_out=False)
        index = int(mb["i"])
        error = f"{exit_info.describe(self.name)} while running mini-batch {mb_id(index)}"
        if status == "oom":
            error += " (likely killed for using too much memory)"
        self.main_log(error)
        outcome = self._failure(mb, status, error, started, error_file=str(self.paths.stderr))
        task.outcomes[index] = outcome
        on_done(outcome)

    def _failure(
        self,
        mb: dict[str, Any],
        status: str,
        error: str,
        started: float | None,
        error_file: str = "",
    ) -> Outcome:
        items = int(mb.get("n", -1))
        elapsed = time.monotonic() - started if started is not None else 0.0
        return Outcome(
            index=int(mb["i"]),
            status=status,
            items=max(items, 0),
            failed_items=max(items, 0),
            process_name=self.name,
            pid=self.proc.pid if self.proc else 0,
            start_time=datetime.now(UTC).isoformat(timespec="milliseconds"),
            elapsed_s=elapsed,
            error=error,
            error_file=error_file or str(self.paths.error),
        )

    async def dump_stacks(self) -> None:
        """Ask the worker's faulthandler to write every thread's stack to its error file."""
        proc = self._proc()
        if proc.process.returncode is None:
            try:
                proc.signals_sent.add(signal.SIGUSR1)
                proc.process.send_signal(signal.SIGUSR1)
            except ProcessLookupError:
                return
            await anyio.sleep(STACK_DUMP_WAIT_S)

    async def retire(self) -> ExitInfo:
        """Ask for ``shutdown()`` and an orderly exit; the ladder if it does not come."""
        proc = self._proc()
        with anyio.CancelScope(shield=True):
            try:
                await proc.send({"op": "shutdown"})
                with anyio.move_on_after(self.stop_grace_s):
                    while (await proc.receive()).get("ev") != "bye":
                        pass
            except BrokenWorker:
                pass
            with anyio.move_on_after(self.stop_grace_s):
                await proc.wait_exit()
            exit_info = await self.stop()
        return exit_info

    async def stop(self) -> ExitInfo:
        proc = self._proc()
        exit_info = await proc.stop(self.stop_grace_s)
        return exit_info

    def log_exit(self, exit_info: ExitInfo) -> None:
        self.main_log(exit_info.describe(self.name))

    def record_batch(self, outcome: Outcome) -> None:
        append_line(self.paths.sys_log, batch_record(outcome, self.ip))

    def _proc(self) -> WorkerProcess:
        if self.proc is None:
            raise RuntimeError(f"{self.name} was not started")
        return self.proc
