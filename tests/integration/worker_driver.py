"""Start a real worker process and drive it over its control socket, as the agent does.

Blocking frames from ``prsd.wire.protocol`` on a ``socket.socketpair()`` with a
timeout, so a test that waits for a frame that never comes fails instead of hanging.
The worker runs in its own session with stdout/stderr in files; ``start_worker``
kills its process group and reaps it whatever happens.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import textwrap
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from prsd.wire import protocol
from prsd.wire.hello import Hello
from prsd.worker.launch import worker_command, worker_env

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

FRAME_TIMEOUT_S = 60.0


def read_text(path: Path) -> str:
    """The file's text, or "" when it does not exist (yet)."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""


@dataclass(frozen=True)
class WorkerPaths:
    """Every file and folder one test worker uses, under one temporary folder."""

    root: Path
    code_dir: Path
    working_dir: Path
    output_dir: Path
    log_dir: Path
    entry_log_file: Path
    error_file: Path
    stdout: Path
    stderr: Path
    profile_file: Path
    out: Path

    @classmethod
    def under(cls, root: Path) -> WorkerPaths:
        logs = root / "logs"
        paths = cls(
            root=root,
            code_dir=root / "code",
            working_dir=root / "work" / "process000",
            output_dir=root / "outputs",
            log_dir=logs / "user" / "entry_script_log" / "0",
            entry_log_file=logs / "user" / "entry_script_log" / "0" / "process000.log.txt",
            error_file=logs / "user" / "error" / "0" / "process000.txt",
            stdout=logs / "user" / "stdout" / "0" / "process000.stdout.txt",
            stderr=logs / "user" / "stderr" / "0" / "process000.stderr.txt",
            profile_file=logs / "sys" / "node" / "0" / "process000.profile",
            out=root / "results" / "task.res",
        )
        for folder in (paths.code_dir, paths.stdout.parent, paths.stderr.parent, paths.out.parent):
            folder.mkdir(parents=True, exist_ok=True)
        return paths

    def write_script(self, source: str, name: str = "score.py") -> Path:
        """Write an entry script (or helper module) into the code folder."""
        path = self.code_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
        return path

    def hello(self, **fields: Any) -> Hello:
        """A hello for these paths; ``fields`` override the defaults."""
        base = Hello(
            job_id="job-1",
            node_id="0",
            process_name="process000",
            code_dir=str(self.code_dir),
            entry_script="score.py",
            working_dir=str(self.working_dir),
            output_dir=str(self.output_dir),
            log_dir=str(self.log_dir),
            entry_log_file=str(self.entry_log_file),
            error_file=str(self.error_file),
            kind="files",
            output_action="append_row",
            profile_file=str(self.profile_file),
            config={"name": "test-job"},
        )
        return replace(base, **fields)


def files_mb(index: int, paths: list[str], key: dict[str, Any] | None = None) -> dict[str, Any]:
    """A files mini-batch as a ``run`` frame carries it."""
    mb: dict[str, Any] = {"i": index, "p": paths, "n": len(paths)}
    if key is not None:
        mb["k"] = key
    return mb


class WorkerProcess:
    """The agent's side of one worker."""

    def __init__(self, proc: subprocess.Popen[bytes], sock: socket.socket, paths: WorkerPaths):
        self.proc = proc
        self.sock = sock
        self.reader = protocol.FrameReader(sock)
        self.paths = paths
        self.board_fd = -1  # the worker's board, as its ``ready`` names it

    def send(self, message: dict[str, Any]) -> None:
        self.sock.sendall(protocol.encode(message))

    def recv(self) -> dict[str, Any]:
        """The next frame; fails the test on end of channel or timeout."""
        frame = self.reader.recv()
        if frame is None:
            raise AssertionError(f"worker closed the channel (exit {self.wait()})")
        return frame

    def expect(self, ev: str) -> dict[str, Any]:
        frame = self.recv()
        assert frame.get("ev") == ev, frame
        return frame

    def run(self, mb: dict[str, Any], out: Path | None = None) -> dict[str, Any]:
        """Run a task of one mini-batch; return its outcome from the ``done`` frame."""
        (outcome,) = self.run_task([mb], out)
        return outcome

    def run_task(self, mbs: list[dict[str, Any]], out: Path | None = None) -> list[dict[str, Any]]:
        """Send a task's ``run`` frame; return the outcomes of its one ``done`` frame."""
        target = self.paths.out if out is None else out
        self.send({"op": "run", "mbs": mbs, "out": str(target), "last": True})
        outcomes: list[dict[str, Any]] = self.expect("done")["outcomes"]
        assert [o["index"] for o in outcomes] == [mb["i"] for mb in mbs]
        return outcomes

    def shutdown(self) -> int:
        """Ask for ``shutdown``; expect ``bye``; return the exit code."""
        self.send({"op": "shutdown"})
        self.expect("bye")
        return self.wait()

    def wait(self, timeout_s: float = FRAME_TIMEOUT_S) -> int:
        return self.proc.wait(timeout_s)


@contextmanager
def start_worker(
    paths: WorkerPaths,
    python: str | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[WorkerProcess]:
    """Start a worker (no hello sent yet); kill and reap its process group on exit."""
    ours, theirs = socket.socketpair()
    base_env = dict(os.environ) if env is None else env
    with paths.stdout.open("ab") as stdout, paths.stderr.open("ab") as stderr:
        proc = subprocess.Popen(
            worker_command(python, theirs.fileno()),
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            env=worker_env(base_env, str(paths.output_dir)),
            cwd=paths.root,
            start_new_session=True,
        )
    theirs.close()
    ours.settimeout(FRAME_TIMEOUT_S)
    try:
        yield WorkerProcess(proc, ours, paths)
    finally:
        ours.close()
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait(FRAME_TIMEOUT_S)


@contextmanager
def ready_worker(paths: WorkerPaths, hello: Hello | None = None) -> Iterator[WorkerProcess]:
    """A started worker that has answered ``ready`` to ``hello``."""
    with start_worker(paths) as worker:
        worker.send((hello or paths.hello()).to_message())
        ready = worker.recv()
        assert ready.get("ev") == "ready", (ready, read_text(paths.error_file))
        worker.board_fd = ready["board"]
        yield worker
