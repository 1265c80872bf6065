"""A worker process from the agent's side: spawn, framed channel, and the stop ladder.

Invariants:
- Workers start in their own session (``start_new_session``), so the ladder signals
  the whole process group: DataLoader children and shell-outs die with the worker.
  Once a worker has exited, its cgroup (``prsd.agent.cgroup``) is killed whole, so
  what left its process group (``setsid``, double forks) dies too.
- The control channel is a socketpair; the worker's stdout and stderr are the user's
  log files. Anything on the channel that is not a valid frame breaks the worker.
  Frames are read as many at a time as have arrived (one wake-up for a worker's
  ``start`` and ``done`` of a short mini-batch) and a task's ``run`` frames go out
  in one write: on tiny mini-batches the per-frame await was the agent's largest cost.
- One stop ladder for every stop: SIGTERM to the group, wait ``grace_s``, SIGKILL to
  the group, reap. It runs shielded, so cancelling the agent never leaks a process.
- Every exit is recorded with its return code, the signal's *name*, and whether
  prsd sent that signal (a timeout or a shutdown) or not (e.g. the OOM killer).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections import deque
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

import anyio
import anyio.to_thread
from anyio.abc import SocketStream

from prsd.agent.outcap import CapturedFile
from prsd.agent.verdicts import ExitInfo
from prsd.wire import protocol
from prsd.wire.fields import RecordError
from prsd.wire.frames import Event, decode_event

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from prsd.agent.cgroup import WorkerGroup


def signal_name(returncode: int) -> str:
    """The name of the signal that ended a process (negative return code), else ""."""
    if returncode >= 0:
        return ""
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


RECEIVE_BYTES = 1 << 16
"""The most bytes one read of the channel takes (frames larger than this need several)."""


class WorkerPid(Protocol):
    """What the agent uses of a worker's process: a spawned child (anyio's ``Process``)
    or a worker forked by the fork server (``prsd.agent.forks.ForkedProcess``)."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    async def wait(self) -> int: ...

    def send_signal(self, sig: signal.Signals) -> None: ...


class BrokenWorker(Exception):
    """The channel to a worker closed or carried garbage."""


class WorkerProcess:
    """A started worker: its process, its channel, and how it was stopped."""

    def __init__(self, process: WorkerPid, stream: SocketStream) -> None:
        self.process = process
        self._stream = stream
        self._frames = protocol.FrameBuffer()  # received bytes not yet cut into frames
        self._events: deque[Event] = deque()  # frames cut and decoded, not yet taken
        self._broken: BrokenWorker | None = None  # raised once the events before it are taken
        self.signals_sent: set[int] = set()
        self.exit: ExitInfo | None = None
        self.group: WorkerGroup | None = None  # its cgroup, killed whole once it exits
        self.captured: list[CapturedFile] = []  # its stdout/stderr (prsd.agent.outcap)

    @property
    def pid(self) -> int:
        return self.process.pid

    async def send(self, message: dict[str, Any]) -> None:
        await self.send_many([message])

    async def send_many(self, messages: list[dict[str, Any]]) -> None:
        """Send frames in order, in one write (a task's ``run`` frames)."""
        try:
            data = b"".join(protocol.encode(message) for message in messages)
            await self._stream.send(data)
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise BrokenWorker(f"cannot write to the worker: {exc}") from exc

    async def send_bytes(self, data: bytes) -> None:
        """Send frames already encoded (a task's ``run`` frames), in one write."""
        try:
            await self._stream.send(data)
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise BrokenWorker(f"cannot write to the worker: {exc}") from exc

    async def receive(self) -> Event:
        """The next frame, decoded (prsd.wire.frames).

        Raises:
            BrokenWorker: the channel closed (the worker died) or a frame was malformed.
        """
        if not self._events:
            await self._fill()
        return self._events.popleft()

    async def receive_ready(self) -> list[Event]:
        """Every frame that has arrived, in order; waits for at least one.

        Raises:
            BrokenWorker: as :meth:`receive`, once the frames before the fault are taken.
        """
        if not self._events:
            await self._fill()
        events = list(self._events)
        self._events.clear()
        return events

    async def _fill(self) -> None:
        """Read until at least one whole frame is decoded into ``_events``."""
        while not self._events:
            if self._broken is not None:
                raise self._broken
            try:
                chunk = await self._stream.receive(RECEIVE_BYTES)
            except (
                anyio.EndOfStream,
                anyio.BrokenResourceError,
                anyio.ClosedResourceError,
                OSError,
            ) as exc:
                raise BrokenWorker("the worker's channel closed") from exc
            self._frames.feed(chunk)
            self._cut_frames()

    def _cut_frames(self) -> None:
        """Move every whole frame of the buffer into ``_events``; a malformed one is
        kept as the fault to raise after them."""
        try:
            while (message := self._frames.next()) is not None:
                self._events.append(decode_event(message))
        except RecordError as exc:  # a malformed frame (ProtocolError is one too)
            self._broken = BrokenWorker(str(exc))

    async def watch(self) -> None:
        """Close the channel as soon as the process exits.

        The worker's own children (DataLoader workers, shell-outs) inherit its end of
        the socket, so the channel alone does not show the worker's death; waiting on
        the process does. A reader blocked in :meth:`receive` then gets BrokenWorker.
        """
        await self.process.wait()
        await self._close_channel()

    def signal_group(self, sig: int) -> None:
        """Send ``sig`` to the worker's process group (remembered as sent by prsd)."""
        self.signals_sent.add(sig)
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            pass

    async def wait_exit(self) -> ExitInfo:
        """Reap the process (after it died or was stopped) and record how it ended."""
        if self.exit is None:
            code = await self.process.wait()
            name = signal_name(code)
            sent = code < 0 and -code in self.signals_sent
            self.exit = ExitInfo(code, name, sent)
            await self._close_channel()
            if self.group is not None:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(self.group.kill_and_remove)
        return self.exit

    async def stop(self, grace_s: float) -> ExitInfo:
        """The stop ladder: SIGTERM to the group, ``grace_s``, SIGKILL, reap (shielded)."""
        with anyio.CancelScope(shield=True):
            if self.process.returncode is None:
                self.signal_group(signal.SIGTERM)
                with anyio.move_on_after(grace_s):
                    await self.process.wait()
                if self.process.returncode is None:
                    self.signal_group(signal.SIGKILL)
            else:
                # Reap stragglers of the group (grandchildren) of a dead worker too.
                self._kill_group_quietly()
            exit_info = await self.wait_exit()
        return exit_info

    def _kill_group_quietly(self) -> None:
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    async def _close_channel(self) -> None:
        with anyio.CancelScope(shield=True):
            try:
                await self._stream.aclose()
            except (OSError, anyio.BrokenResourceError):
                pass


async def spawn_worker(
    command_for_fd: Callable[[int], list[str]],
    *,
    env: dict[str, str],
    cwd: Path,
    stdout_path: Path,
    stderr_path: Path,
    user: int | None = None,
    group: int | None = None,
    extra_groups: list[int] | None = None,
    umask: int = -1,
) -> WorkerProcess:
    """Start a worker with a fresh socketpair as its control channel.

    ``command_for_fd`` builds the command line from the child's end of the channel
    (the same descriptor number in the child, via ``pass_fds``).
    """
    ours, theirs = socket.socketpair()
    try:
        out, err = await anyio.to_thread.run_sync(open_logs, stdout_path, stderr_path)
        with out, err:
            process = await anyio.open_process(
                command_for_fd(theirs.fileno()),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                cwd=cwd,
                env=env,
                start_new_session=True,
                pass_fds=(theirs.fileno(),),
                user=user,
                group=group,
                extra_groups=extra_groups,
                umask=umask,
            )
            captured = CapturedFile.pair((stdout_path, out), (stderr_path, err))
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    stream = await SocketStream.from_socket(ours)
    worker = WorkerProcess(process, stream)
    worker.captured = captured
    return worker


def open_logs(stdout_path: Path, stderr_path: Path) -> tuple[BinaryIO, BinaryIO]:
    """Open (append) the files the worker's stdout and stderr go to (may be on NFS)."""
    stdout_path.parent.mkdir(parents=True, exist_ok=True)
    stderr_path.parent.mkdir(parents=True, exist_ok=True)
    # Read and write: the agent keeps a copy to cut the file down (prsd.agent.outcap).
    out = open(stdout_path, "a+b")  # noqa: SIM115 - handed to the child, closed by the caller
    try:
        err = open(stderr_path, "a+b")  # noqa: SIM115 - as above
    except BaseException:
        out.close()
        raise
    return out, err
