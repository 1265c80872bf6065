"""A worker process's handles: its process, its logs, and the ways to stop it.

:class:`WorkerHandle` is what :class:`~prsd.agent.session.WorkerSession` does to the
process itself: watch its memory and output while it lives, send it frames in order
(one sender on the channel at a time), and when its state machine says so dump its
stacks (SIGUSR1), ask for ``shutdown()``, run the stop ladder, write its exit line
once; and it batches the worker's per-mini-batch records into one write per task,
queued on the job's :class:`~prsd.agent.writer.FileWriter`.
"""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

import anyio

from prsd.agent.nodelog import append_stamped, batch_record, stamped
from prsd.agent.proc import BrokenWorker
from prsd.agent.verdicts import MemoryEvidence
from prsd.agent.workerwatch import watch_worker
from prsd.tunables import max_captured_output_bytes
from prsd.wire import frames

if TYPE_CHECKING:
    from prsd.agent.context import JobContext, ProcessPaths
    from prsd.agent.memwatch import MemoryWatch
    from prsd.agent.proc import WorkerProcess
    from prsd.agent.verdicts import ExitInfo
    from prsd.agent.writer import FileWriter
    from prsd.wire.records import Outcome

STACK_DUMP_WAIT_S = 0.3


class WorkerHandle:
    """The process side of a worker session (the session sets every attribute)."""

    name: str
    ip: str
    ctx: JobContext
    paths: ProcessPaths
    proc: WorkerProcess | None
    memory: MemoryWatch | None
    memory_limit_bytes: int | None
    stop_grace_s: float
    exit_reason: str
    writer: FileWriter
    _exit_logged: bool
    _records: list[str]
    _sending: anyio.Lock

    async def watch_while_alive(self, proc: WorkerProcess, memory: MemoryWatch) -> None:
        """The worker's memory watch and output cap, ended the moment its process exits.

        The loop would see the exit only at its next tick (up to 0.2 s), and the end of
        the job on this node waits for it; the output cap's last check still runs.
        """
        cap = max_captured_output_bytes()
        async with anyio.create_task_group() as watches:
            watches.start_soon(
                watch_worker, memory, proc.captured, cap, lambda: proc.process.returncode is None
            )
            await proc.process.wait()
            watches.cancel_scope.cancel()

    async def send_frames(self, data: bytes) -> None:
        """Frames to the worker, after every frame already being sent to it."""
        try:
            async with self._sending:
                await self._proc().send_bytes(data)
        except BrokenWorker:
            pass  # the collector sees the closed channel and records the death

    def main_log(self, line: str) -> None:
        raise NotImplementedError

    def memory_evidence(self, mb: int | None = None) -> MemoryEvidence:
        """What is known of the worker's memory (sampled while it lived; while
        mini-batch ``mb`` ran, when given)."""
        if self.memory is None:
            return MemoryEvidence()
        return self.memory.evidence(self.memory_limit_bytes, mb)

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

    async def _ask_shutdown(self) -> None:
        proc = self._proc()
        try:
            await proc.send(frames.Shutdown().to_json())
            with anyio.move_on_after(self.stop_grace_s):
                while not isinstance(await proc.receive(), frames.Bye):
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
            path, lines, self._records = self.paths.sys_log, self._records, []
            self.writer.put(lambda: append_stamped(path, lines, self.ctx.layout.root))

    def _proc(self) -> WorkerProcess:
        if self.proc is None:
            raise RuntimeError(f"{self.name} was not started")
        return self.proc
