"""One worker's life: start, wait for init, run mini-batches under timeouts, stop.

The session is the I/O shell around :mod:`prsd.agent.workerstate`: each thing that
happens to the worker is an event, and the pure transition says what to do (dump
stacks, the stop ladder, record the exit, fail the mini-batch in hand, count an init
failure, let the slot replace the worker) in that order. :meth:`WorkerSession.apply`
carries out every action, and nothing else decides them. The session's log writes
go through the job's :class:`~prsd.agent.writer.FileWriter`, off the event loop.

The session enforces the per-mini-batch clocks (docs/supervision.md, "Timeouts"):
:func:`prsd.agent.handover.collect` waits for a task's ``done`` frame under them,
reading the worker's board, and says which mini-batch was in hand when the worker
died or its clock ran out; the session acts on that through the state machine.

A mini-batch that runs out of time gets its Python stacks dumped (SIGUSR1 ->
faulthandler in the worker, into ``user/error/<node>/<process>.txt``) before the
stop ladder ends the worker. A worker that dies (segfault, ``os._exit``, the OOM
killer) fails only the mini-batch it was running. Every exit is written to
``_main.txt``: return code, signal name, whether prsd sent it, and why.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from prsd.agent.ahead import HandsAhead
from prsd.agent.batchfail import death, failed_outcome, timeout_error
from prsd.agent.handle import WorkerHandle
from prsd.agent.handover import InHand, collect, run_frames
from prsd.agent.initresult import InitResult, died_during_init, init_timed_out
from prsd.agent.launcher import launch_worker, sandbox_lines
from prsd.agent.memwatch import MemoryWatch
from prsd.agent.nodelog import append_stamped, stamped
from prsd.agent.proc import BrokenWorker, WorkerProcess
from prsd.agent.workerstate import Action, Event, Transition, WorkerState, transition
from prsd.owner import RunAs, make_files_for
from prsd.spool.layout import process_name
from prsd.wire import frames
from prsd.wire.board import RUNNING, Board
from prsd.wire.records import TIMEOUT

if TYPE_CHECKING:
    from collections.abc import Callable

    from anyio.abc import TaskGroup

    from prsd.agent.context import JobContext, ProcessPaths
    from prsd.agent.task import RunningTask
    from prsd.agent.verdicts import ExitInfo
    from prsd.agent.writer import FileWriter
    from prsd.wire.records import MiniBatch, Outcome

STOP_GRACE_S = 5.0


class WorkerSession(WorkerHandle, HandsAhead):
    """A worker process of one job on this node."""

    def __init__(
        self,
        ctx: JobContext,
        number: int,
        gpu: int | None,
        *,
        ip: str,
        stop_grace_s: float,
        writer: FileWriter,
        on_init_failure: Callable[[WorkerSession, InitResult], None],
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
        self.writer = writer
        self.on_init_failure = on_init_failure
        self.exit_info: ExitInfo | None = None  # once RECORD_EXIT has run
        self.replace = False  # REPLACE: the slot starts a new worker after this one
        self._init_result: InitResult | None = None  # for COUNT_INIT_FAILURE
        self._in_hand: InHand | None = None  # for FAIL_BATCH
        self._board: Board | None = None  # the worker's board, opened at ready
        self.ahead: RunningTask | None = None  # its next task, handed over while one runs
        self._collecting = False  # in a task's collect: a task handed now comes next
        self._withdrew = ""  # why the task handed ahead was withdrawn (prsd.agent.ahead)
        self._sending = anyio.Lock()  # one sender on the channel at a time

    @property
    def busy(self) -> bool:
        return self.state is WorkerState.BUSY

    def main_log(self, line: str) -> None:
        path, lines = self.ctx.main_log(), [stamped(line)]
        self.writer.put(lambda: append_stamped(path, lines, self.ctx.layout.root))

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
        self.memory = memory = MemoryWatch(proc.pid, proc.group)
        tg.start_soon(self.watch_while_alive, proc, memory)
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
        """Move to the next state and carry out every one of its actions, in order."""
        step = transition(self.state, event)
        self.state = step.state
        if reason and not self.exit_reason:
            self.exit_reason = reason
        for action in step.actions:
            await self._carry_out(action, event)
        return step

    async def _carry_out(self, action: Action, event: Event) -> None:
        """The one dispatcher of the state machine's actions."""
        if action is Action.DUMP_STACKS:
            await self.dump_stacks()
        elif action is Action.STOP_LADDER:
            await self.stop(expect_exit=event in (Event.INIT_FAILED, Event.EXITED))
        elif action is Action.SEND_SHUTDOWN:
            await self._ask_shutdown()
        elif action is Action.RECORD_EXIT:
            self.exit_info = await self._proc().wait_exit()
            self.log_exit(self.exit_info)
            self.close_board()
        elif action is Action.FAIL_BATCH:
            self._fail_batch(event)
        elif action is Action.COUNT_INIT_FAILURE:
            self.on_init_failure(self, self._init_failure())
        elif action is Action.REPLACE:
            self.replace = True

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
        msg: frames.Event | None = None
        died = False
        with anyio.move_on_after(deadline_s):
            try:
                msg = await proc.receive()
            except BrokenWorker:
                died = True
        if self.state in (WorkerState.STOPPING, WorkerState.DEAD, WorkerState.RETIRED):
            await proc.wait_exit()  # stop_now() stopped it: not an init failure
            return InitResult(False, "stopped by prsd during init()", stopped=True)
        if isinstance(msg, frames.Ready):
            try:
                self._open_board(msg)
            except OSError as exc:
                self._init_result = InitResult(
                    False, f"prsd could not open the worker's board: {exc}"
                )
                await self.apply(Event.INIT_TIMED_OUT, "its board could not be opened")
                return self._init_failure()
            await self.apply(Event.READY)
            self.main_log(f"{self.name} ready: init() took {msg.init_s:.3f} s")
            return InitResult(True, init_s=msg.init_s)
        if msg is None and not died:
            self._init_result = init_timed_out(
                deadline_s, self.ctx.spec.timeout_s, self.paths.error
            )
            await self.apply(Event.INIT_TIMED_OUT, "init() timed out")
        elif isinstance(msg, frames.InitFailed):
            self._init_result = InitResult(False, msg.error, msg.traceback_tail, msg.error_file)
            await self.apply(Event.INIT_FAILED, "init() failed")
        else:
            await self.apply(Event.EXITED, "died during init()")
        return self._init_failure()

    def _open_board(self, ready: frames.Ready) -> None:
        """Open the board the worker named in ``ready``; the memory watch reads it too.

        Raises:
            OSError: the worker or its descriptor is gone.
        """
        board = self._board = Board.open_of(self._proc().pid, ready.board)

        def running() -> int | None:
            mark = board.read_mark()
            return mark.mb if mark is not None and mark.phase == RUNNING else None

        if self.memory is not None:
            self.memory.running = running

    def close_board(self) -> None:
        """Let go of the board and of the memory watch's descriptor (the worker has
        exited; its watch closes them too, but may have been cancelled before it ran)."""
        if self.memory is not None:
            self.memory.close()
            self.memory.running = None
        if self._board is not None:
            self._board.close()
            self._board = None

    def _init_failure(self) -> InitResult:
        """The failed init() (its message, or how the worker died during it)."""
        if self._init_result is None:
            exit_info = self.exit_info
            assert exit_info is not None  # RECORD_EXIT came first
            self._init_result = died_during_init(exit_info, self.name, self.paths.stderr)
        return self._init_result

    # --- running ------------------------------------------------------------------

    async def run_task(
        self, task: RunningTask, on_done: Callable[[Outcome], None], *, handed: bool = False
    ) -> bool:
        """Run the task's remaining mini-batches; False if the worker died or was stopped.
        ``handed``: its frames went out ahead (:meth:`hand_ahead`), the worker began it
        as it sent the last task's ``done``, or, withdrawn, answered ``skipped``
        (``task.withdrawn``: none of it ran, prsd.agent.ahead)."""
        board = self._board
        assert board is not None  # opened at ready
        remaining = task.remaining()
        await self.apply(Event.TASK)
        self.current_task = task.task.name
        if not handed:
            await self.make_result_file(task)
            board.empty()  # the worker is idle: the last task's mark and journal go
        try:
            async with anyio.create_task_group() as tg:
                if not handed:
                    # Frames go out while the worker runs: a task too big for the pipe
                    # is only taken in as the worker reaches its later frames.
                    tg.start_soon(self.send_frames, run_frames(remaining, str(task.out_tmp)))
                self._collecting = True
                healthy = await self._collect(task, remaining, on_done, time.monotonic())
                self._collecting = False  # what is claimed from now on waits for a worker
                tg.cancel_scope.cancel()
            if self.state is not WorkerState.BUSY:
                return False  # dead, or stopped by prsd while its last result came in
            if healthy:
                await self.apply(Event.TASK_DONE)
            return healthy
        finally:
            self._collecting = False
            self.current_task = ""
            self.flush_records()

    async def make_result_file(self, task: RunningTask) -> None:
        if self.run_as is not None and not task.prepared:
            await anyio.to_thread.run_sync(self.prepare, task)

    def prepare(self, task: RunningTask) -> None:
        """Make ``task``'s result file for the job's owner (the worker appends to it as
        them); the feed calls it in the thread of the task's claim (one hop for both).

        Raises:
            JobOwnerRefused: a link on the way to the file, or the file is one.
        """
        if self.run_as is not None and not task.prepared:
            make_files_for(self.run_as, [task.out_tmp], anchor=self.ctx.layout.root)
            task.prepared = True

    async def _collect(
        self,
        task: RunningTask,
        remaining: list[MiniBatch],
        on_done: Callable[[Outcome], None],
        handed: float,
    ) -> bool:
        """Wait for the task's ``done`` (:func:`~prsd.agent.handover.collect`); a death or a
        timeout goes through the state machine with the mini-batch in hand."""
        spec = self.ctx.spec
        got = await collect(
            self._proc(),
            self._board,
            task,
            remaining,
            on_done,
            handed,
            timeout_s=spec.timeout_s,
            overhead_s=spec.task_overhead_timeout_s,
        )
        if got.skipped:
            self.skipped(task)
        if got.in_hand is None:
            return True
        if got.problem:
            self.main_log(f"{self.name}: {got.problem}")
        self._in_hand = InHand(task, got.in_hand, got.started, on_done)
        if got.died:
            await self._died()
        else:  # the clock ran out
            await self._timed_out()
        return False

    async def _timed_out(self) -> None:
        hand = self._in_hand
        assert hand is not None
        spec = self.ctx.spec
        hand.error = timeout_error(
            running=hand.started is not None,
            timeout_s=spec.timeout_s,
            overhead_s=spec.task_overhead_timeout_s,
        )
        if self.state is WorkerState.STOPPING:
            return
        why = f"{hand.error} (mini-batch {hand.mb.mb_id})"
        await self.apply(Event.RUN_TIMED_OUT, why)  # ... FAIL_BATCH

    async def _died(self) -> None:
        hand = self._in_hand
        assert hand is not None
        if self.state is not WorkerState.BUSY:
            # Stopped by prsd (the job ended): the mini-batch gets no outcome, so it
            # counts as not run, and its retries are not used up.
            await self._proc().wait_exit()
            return
        why = f"died while running mini-batch {hand.mb.mb_id}"
        await self.apply(Event.EXITED, why)  # ... FAIL_BATCH

    def _fail_batch(self, event: Event) -> None:
        """FAIL_BATCH: the mini-batch in hand gets a failed outcome (timeout, crash, oom)."""
        hand, self._in_hand = self._in_hand, None
        assert hand is not None
        error_file = str(self.paths.error)
        if event is Event.RUN_TIMED_OUT:
            status, error = TIMEOUT, hand.error
        else:
            assert self.exit_info is not None  # RECORD_EXIT came first
            status, error = death(self.exit_info, self.memory_evidence(hand.mb.index))
            error_file = str(self.paths.stderr)
        outcome = failed_outcome(
            hand.mb,
            status,
            error,
            elapsed_s=time.monotonic() - hand.started if hand.started is not None else 0.0,
            process_name=self.name,
            pid=self.proc.pid if self.proc else 0,
            error_file=error_file,
        )
        hand.task.outcomes[outcome.index] = outcome
        hand.on_done(outcome)

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
