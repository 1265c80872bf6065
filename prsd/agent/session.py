"""One worker's life: start, wait for init, run mini-batches under timeouts, stop.

The session is the I/O shell around :mod:`prsd.agent.workerstate`: each thing that
happens to the worker is an event, and the pure transition says what to do (dump
stacks, the stop ladder, record the exit) in that order.

The session enforces the per-mini-batch clocks (SPEC sections 4 and 7):

- ``task_overhead_timeout``: from handing a mini-batch over (or finishing the one
  before it) until the worker says ``start`` (loading the mini-batch);
- ``retry_settings.timeout``: from ``start`` until ``done`` (the ``run()`` call).

A mini-batch that runs out of time gets its Python stacks dumped (SIGUSR1 ->
faulthandler in the worker, into ``user/error/<node>/<process>.txt``) before the
stop ladder ends the worker. A worker that dies (segfault, ``os._exit``, the OOM
killer) fails only the mini-batch it was running. Every exit is written to
``_main.txt``: return code, signal name, whether prsd sent it, and why.
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio

from prsd.agent.launcher import launch_worker, sandbox_lines
from prsd.agent.memwatch import MemoryWatch
from prsd.agent.nodelog import append_line, append_stamped, batch_record, stamped
from prsd.agent.outcap import keep_under_cap
from prsd.agent.proc import BrokenWorker, WorkerProcess
from prsd.agent.verdicts import ExitInfo, MemoryEvidence, classify_exit, oom_reason
from prsd.agent.workerstate import Action, Event, Transition, WorkerState, transition
from prsd.owner import RunAs, make_files_for
from prsd.storage.layout import mb_id, process_name
from prsd.storage.records import OOM, TIMEOUT, Outcome
from prsd.tunables import max_captured_output_bytes

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
    timed_out: bool = False  # still in init() at the deadline (SPEC section 4, third rule)
    stopped: bool = False  # stopped by prsd (the job ended): not an init failure


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
        self.state = WorkerState.STARTING
        self.current_task = ""
        self.memory: MemoryWatch | None = None
        self._records: list[str] = []
        self.run_as: RunAs | None = None  # None: the agent's own identity (prsd/owner.py)
        self.memory_limit_bytes: int | None = None  # PRSD_WORKER_MEMORY_MAX, if any
        self.exit_reason = ""  # why it ended, for the exit line in _main.txt
        self._exit_logged = False
        self._stop_before_start = ""  # stop_now() came before the process existed

    @property
    def busy(self) -> bool:
        return self.state is WorkerState.BUSY

    def main_log(self, line: str) -> None:
        append_line(self.ctx.main_log(), line)

    async def start(self, tg: TaskGroup) -> None:
        """Spawn the worker, watch its process in ``tg``, and send its configuration."""
        launched = await launch_worker(self.ctx, self.gpu, self.paths)
        self.proc = proc = launched.proc
        self.run_as = launched.run_as
        self.memory_limit_bytes = launched.memory_limit_bytes
        if self.number == 0:
            for line in sandbox_lines(launched.memory_limit_bytes):
                self.main_log(line)
        tg.start_soon(proc.watch)
        cap = max_captured_output_bytes()
        tg.start_soon(keep_under_cap, proc.captured, cap, lambda: proc.process.returncode is None)
        self.memory = MemoryWatch(proc.pid, proc.group)
        tg.start_soon(self.memory.run)
        gpu = f", CUDA_VISIBLE_DEVICES={self.gpu}" if self.gpu is not None else ""
        self.main_log(f"{self.name} started (pid {proc.pid}{gpu})")
        if self._stop_before_start:
            await self.stop_now(self._stop_before_start)
            return
        try:
            await proc.send(self.ctx.hello(self.number, self.paths))
        except BrokenWorker:
            pass  # it died at once: wait_ready() sees the closed channel and records it

    # --- the state machine --------------------------------------------------------

    async def apply(self, event: Event, reason: str = "") -> Transition:
        """Move to the next state and carry out its actions (other than the caller's)."""
        step = transition(self.state, event)
        self.state = step.state
        if reason and not self.exit_reason:
            self.exit_reason = reason
        for action in step.actions:
            if action is Action.DUMP_STACKS:
                await self.dump_stacks()
            elif action is Action.STOP_LADDER:
                await self.stop(expect_exit=event in (Event.INIT_FAILED, Event.EXITED))
            elif action is Action.SEND_SHUTDOWN:
                await self._ask_shutdown()
            elif action is Action.RECORD_EXIT:
                self.log_exit(await self._proc().wait_exit())
        return step

    async def stop_now(self, reason: str) -> None:
        """The job ended (or the node stops): the stop ladder, whatever the worker is doing."""
        if self.proc is None:
            self._stop_before_start = reason
            return
        if self.state in (WorkerState.DEAD, WorkerState.RETIRED):
            return
        with anyio.CancelScope(shield=True):
            if self.state is not WorkerState.STOPPING:
                await self.apply(Event.STOP, reason)
            if self.state is WorkerState.STOPPING:
                await self.apply(Event.EXITED)

    # --- init ---------------------------------------------------------------------

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
        if self.state in (WorkerState.STOPPING, WorkerState.DEAD, WorkerState.RETIRED):
            await proc.wait_exit()  # stop_now() stopped it: not an init failure
            return InitResult(False, "stopped by prsd during init()", stopped=True)
        ev = msg.get("ev") if msg is not None else None
        if ev == "ready" and msg is not None:
            await self.apply(Event.READY)
            init_s = float(msg.get("init_s", time.monotonic() - began))
            self.main_log(f"{self.name} ready: init() took {init_s:.3f} s")
            return InitResult(True, init_s=init_s)
        if msg is None:
            result = InitResult(
                False,
                f"init() did not finish within {deadline_s:g} s (3 x retry_settings.timeout"
                f" + {deadline_s - 3 * self.ctx.spec.timeout_s:g} s); its stacks are in "
                f"{self.paths.error}",
                error_file=str(self.paths.error),
                timed_out=True,
            )
            await self.apply(Event.INIT_TIMED_OUT, "init() timed out")
            return result
        if ev == "init_failed" and msg is not None:
            await self.apply(Event.INIT_FAILED, "init() failed")
            return InitResult(
                False,
                str(msg.get("error", "init() failed")),
                str(msg.get("traceback_tail", "")),
                str(msg.get("error_file", "")),
            )
        await self.apply(Event.EXITED, "died during init()")
        exit_info = await proc.wait_exit()
        return InitResult(
            False,
            f"{exit_info.describe(self.name)} during init()",
            error_file=str(self.paths.stderr),
        )

    # --- running ------------------------------------------------------------------

    async def run_task(self, task: RunningTask, on_done: Callable[[Outcome], None]) -> bool:
        """Run the task's remaining mini-batches; False if the worker died or was stopped."""
        proc = self._proc()
        remaining = task.remaining()
        await self.apply(Event.TASK)
        self.current_task = task.task.name
        # The worker appends to it as the owner.
        make_files_for(self.run_as, [task.out_tmp], anchor=self.ctx.layout.root)

        async def send_all() -> None:
            # Frames go out while results come back: a task of many large mini-batches
            # fills both pipes, and a sender that waited for all its writes first would
            # deadlock with a worker blocked writing its "start" frames.
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
                pass  # the collector sees the closed channel and records the death

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(send_all)
                healthy = await self._collect(task, remaining, on_done)
                tg.cancel_scope.cancel()
            if self.state is not WorkerState.BUSY:
                return False  # dead, or stopped by prsd while its last result came in
            if healthy:
                await self.apply(Event.TASK_DONE)
            return healthy
        finally:
            self.current_task = ""
            self.flush_records()

    async def _collect(
        self, task: RunningTask, remaining: list[dict[str, Any]], on_done: Callable[[Outcome], None]
    ) -> bool:
        """Receive ``start``/``done`` for each mini-batch under its clock.

        One cancel scope serves the whole task; its deadline moves with each event
        (``task_overhead_timeout`` until ``start``, ``retry_settings.timeout`` until
        ``done``), which costs far less than a scope per message on tiny mini-batches.
        """
        proc = self._proc()
        spec = self.ctx.spec
        pending = {int(mb["i"]): mb for mb in remaining}  # in hand-over order
        started: float | None = None
        died = False
        with anyio.CancelScope(
            deadline=anyio.current_time() + spec.task_overhead_timeout_s
        ) as clock:
            while pending:
                try:
                    msg = await proc.receive()
                except BrokenWorker:
                    died = True
                    break
                ev = msg.get("ev")
                if ev == "start":
                    started = time.monotonic()
                    clock.deadline = anyio.current_time() + spec.timeout_s
                    if self.memory is not None:
                        self.memory.reset()
                elif ev == "done":
                    outcome = Outcome.from_json(msg["outcome"])
                    task.outcomes[outcome.index] = outcome
                    pending.pop(outcome.index, None)
                    on_done(outcome)
                    started = None
                    clock.deadline = anyio.current_time() + spec.task_overhead_timeout_s
        if not pending:
            return True
        first = next(iter(pending.values()))
        if died:
            await self._died(task, first, started, on_done)
        else:  # the clock ran out
            await self._timed_out(task, first, started, on_done)
        return False

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
                f"run() did not return within {spec.timeout_s:g} s (retry_settings.timeout); "
                "its stacks are in the worker's error file"
            )
        else:
            error = (
                f"loading the mini-batch took longer than {spec.task_overhead_timeout_s:g} s "
                "(task_overhead_timeout); its stacks are in the worker's error file"
            )
        if self.state is WorkerState.STOPPING:
            return
        await self.apply(Event.RUN_TIMED_OUT, f"{error} (mini-batch {mb_id(index)})")
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
        if self.state is not WorkerState.BUSY:
            # Stopped by prsd (the job ended): the mini-batch gets no outcome, so it
            # counts as not run, and its retries are not used up.
            await proc.wait_exit()
            return
        index = int(mb["i"])
        await self.apply(Event.EXITED, f"died while running mini-batch {mb_id(index)}")
        exit_info = await proc.wait_exit()
        evidence = self.memory_evidence()
        status = classify_exit(exit_info, timed_out=False, memory=evidence)
        # Process and mini-batch have their own columns: the text stays the same for
        # every death of one kind, so user/error.txt counts them on one line.
        error = f"the worker died: {exit_info.summary()}"
        if status == OOM:
            error += f" ({oom_reason(evidence)})"
        outcome = self._failure(mb, status, error, started, error_file=str(self.paths.stderr))
        task.outcomes[index] = outcome
        on_done(outcome)

    def memory_evidence(self) -> MemoryEvidence:
        """What is known of the worker's memory (sampled while it lived)."""
        if self.memory is None:
            return MemoryEvidence()
        return self.memory.evidence(self.memory_limit_bytes)

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

    # --- stopping -----------------------------------------------------------------

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
            if self.state is WorkerState.IDLE:
                await self.apply(Event.RETIRE, "retired: no more work")
                with anyio.move_on_after(self.stop_grace_s):
                    await proc.wait_exit()
                if proc.exit is None:
                    self.exit_reason = "retired: shutdown() did not end in time"
                    await self.apply(Event.STOP)
                await self.apply(Event.EXITED)
        return await proc.wait_exit()

    async def _ask_shutdown(self) -> None:
        proc = self._proc()
        try:
            await proc.send({"op": "shutdown"})
            with anyio.move_on_after(self.stop_grace_s):
                while (await proc.receive()).get("ev") != "bye":
                    pass
        except BrokenWorker:
            pass

    async def stop(self, *, expect_exit: bool = False) -> ExitInfo:
        """The stop ladder; with ``expect_exit``, first give the worker a grace to end alone."""
        proc = self._proc()
        if expect_exit:
            with anyio.CancelScope(shield=True), anyio.move_on_after(self.stop_grace_s):
                await proc.wait_exit()
        return await proc.stop(self.stop_grace_s)

    def log_exit(self, exit_info: ExitInfo) -> None:
        """``process002 exits with returncode -9 (SIGKILL, not sent by prsd): why``, once."""
        if self._exit_logged:
            return
        self._exit_logged = True
        why = f": {self.exit_reason}" if self.exit_reason else ""
        self.main_log(f"{exit_info.describe(self.name)}{why}")

    def record_batch(self, outcome: Outcome) -> None:
        """Note a finished mini-batch; written to the worker's log when its task ends
        (one write per task, not per mini-batch: the hot path of tiny mini-batches)."""
        self._records.append(stamped(batch_record(outcome, self.ip)))

    def flush_records(self) -> None:
        if self._records:
            lines, self._records = self._records, []
            append_stamped(self.paths.sys_log, lines)

    def _proc(self) -> WorkerProcess:
        if self.proc is None:
            raise RuntimeError(f"{self.name} was not started")
        return self.proc
