"""Workers forked from a pre-imported fork server (``prsd.worker.forkserver``).

A fresh worker interpreter spends most of its first second starting Python and importing
the worker host; ``prsd run`` starts one fork server at its own start, in parallel with
taking the job in and splitting it, and ``prsd agent`` one at its start, so a job's
first worker is forked, warm, when the job is taken on (:func:`start_fork_server`).

Invariants:
- A forked worker gets what :func:`prsd.agent.proc.spawn_worker` gives a spawned one:
  its own session, the environment given, the working folder, the umask, stdin from
  ``/dev/null``, stdout and stderr appended to its files, and its channel; the caller
  puts it in its cgroup as it does a spawned one. :func:`can_fork` says when a worker
  can be forked: no other uid, no other interpreter, and every variable the
  interpreter reads at its start (``PYTHON*``, ``LD_*``) as the server's. Any other
  worker is spawned as before.
- A forked worker is the server's child: the server reaps it and reports its return
  code, which :class:`ForkedProcess` waits for. If the server dies, its workers die with
  it (SIGKILL on the parent's death) and count as killed (``-SIGKILL``).
- :meth:`ForkServer.close` ends the server; the workers still running die with it.

Errors: :meth:`ForkServer.spawn` raises OSError when the server is gone or refuses
(the caller then spawns the worker itself).
"""

from __future__ import annotations

import array
import json
import os
import signal
import socket
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from anyio.abc import SocketStream

from prsd.agent.outcap import CapturedFile
from prsd.agent.proc import WorkerProcess, open_logs
from prsd.logconfig import get_logger
from prsd.spool.jsonobject import decode_object
from prsd.worker.forkserver import MAX_MESSAGE
from prsd.worker.launch import BOOT_PATH, worker_env

if TYPE_CHECKING:
    from pathlib import Path

STARTUP_PREFIXES = ("PYTHON", "LD_")  # read when an interpreter starts: a fork keeps the server's

log = get_logger("prsd.agent")


def start_fork_server() -> ForkServer | None:
    """A fork server, or None where it cannot start (its interpreter cannot be run by
    this user, say): the workers are then spawned one by one."""
    try:
        return ForkServer.start()
    except OSError as exc:
        log.info("no fork server: workers are spawned", error=str(exc))
        return None


def can_fork(
    server_env: dict[str, str], env: dict[str, str], python: str | None, user: int | None
) -> bool:
    """Can a worker with ``env``, ``python`` and ``user`` be forked from the server?"""
    if user is not None or (python is not None and python != sys.executable):
        return False
    names = {k for k in (*server_env, *env) if k.startswith(STARTUP_PREFIXES)}
    return all(server_env.get(k) == env.get(k) for k in names)


class ForkedProcess:
    """A worker forked by the server: its pid, and its return code once reported."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._ended = anyio.Event()

    def ended(self, code: int) -> None:
        if self.returncode is None:
            self.returncode = code
            self._ended.set()

    async def wait(self) -> int:
        await self._ended.wait()
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: signal.Signals) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass


class ForkServer:
    """The agent's end of one fork server (started by :meth:`start`, served by :meth:`serve`)."""

    def __init__(self, process: subprocess.Popen[bytes], sock: socket.socket, env: dict[str, str]):
        self.process = process
        self.env = env
        self._sock = sock
        self._next_id = 0
        self._replies: dict[int, tuple[anyio.Event, list[dict[str, Any]]]] = {}
        self._forked: dict[int, ForkedProcess] = {}
        self._early_exits: dict[int, int] = {}
        self._preloaded: set[str] = set()
        self._gone = False

    @classmethod
    def start(cls) -> ForkServer:
        """Start the server (it imports the worker host while the caller goes on)."""
        env = worker_env(os.environ, "")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            command = [sys.executable, BOOT_PATH, "--fork-server", "--fd", str(theirs.fileno())]
            process = subprocess.Popen(
                [*command, "--parent-pid", str(os.getpid())],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                cwd="/",
                env=env,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.setblocking(False)
        return cls(process, ours, env)

    async def serve(self) -> None:
        """Read the server's answers and exit reports until it is gone (run in a task group)."""
        try:
            while True:
                await anyio.wait_readable(self._sock)
                try:
                    data = self._sock.recv(MAX_MESSAGE)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    break
                self._dispatch(decode_object(data))
        finally:
            self._lost()

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "exit" in message:
            pid, code = int(message["exit"]), int(message["code"])
            forked = self._forked.pop(pid, None)
            if forked is None:
                self._early_exits[pid] = code
            else:
                forked.ended(code)
            return
        waiting = self._replies.pop(int(message["id"]), None)
        if waiting is not None:
            waiting[1].append(message)
            waiting[0].set()

    def _lost(self) -> None:
        """The server is gone: its workers died with it; waiting spawns fail."""
        self._gone = True
        for forked in self._forked.values():
            forked.ended(-signal.SIGKILL)
        self._forked.clear()
        for event, _ in self._replies.values():
            event.set()

    async def spawn(
        self, env: dict[str, str], cwd: Path, stdout_path: Path, stderr_path: Path, umask: int
    ) -> WorkerProcess:
        """A worker forked from the server (see the module header).

        Raises:
            OSError: the server is gone or could not fork; the log files cannot be opened.
        """
        if self._gone:
            raise OSError("the fork server is gone")
        ours, theirs = socket.socketpair()
        try:
            out, err = await anyio.to_thread.run_sync(open_logs, stdout_path, stderr_path)
            with out, err:
                self._next_id += 1
                request_id = self._next_id
                event, box = anyio.Event(), list[dict[str, Any]]()
                self._replies[request_id] = (event, box)
                body = {"id": request_id, "env": env, "cwd": str(cwd), "umask": umask}
                fds = array.array("i", [theirs.fileno(), out.fileno(), err.fileno()])
                self._sock.sendmsg(
                    [json.dumps(body).encode()], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)]
                )
                await event.wait()
                reply = box[0] if box else {"error": "the fork server is gone"}
                if "pid" not in reply:
                    raise OSError(f"the fork server cannot start a worker: {reply['error']}")
                captured = CapturedFile.pair((stdout_path, out), (stderr_path, err))
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        process = ForkedProcess(int(reply["pid"]))
        early = self._early_exits.pop(process.pid, None)
        if early is not None:
            process.ended(early)
        else:
            self._forked[process.pid] = process
        worker = WorkerProcess(process, await SocketStream.from_socket(ours))
        worker.captured = captured
        return worker

    def preload_for(self, kind: str) -> None:
        """Ask the server to import what the loader of input ``kind`` imports
        (``prsd.worker.loaders.PRELOADS``) before its next fork, once each, so the workers
        it forks start with them. Nothing is answered; a server that is gone is left to
        :meth:`spawn` to report."""
        from prsd.worker.loaders import preloads_for  # not on prsd run's way to the server

        wanted = [m for m in preloads_for(kind) if m not in self._preloaded]
        if not wanted or self._gone:
            return
        self._preloaded.update(wanted)
        try:
            self._sock.send(json.dumps({"preload": wanted}).encode())
        except OSError as exc:
            log.info("fork server: no preload", modules=wanted, error=str(exc))

    def close(self) -> None:
        """End the server (its workers still running die with it) and reap it."""
        self._sock.close()
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait()
