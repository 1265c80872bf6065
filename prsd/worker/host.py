"""The worker host: the code around the user's entry script inside a worker process.

Started by ``boot.py`` as ``host.main(["--fd", N, ...])``. It reads ``hello``, sets
the process up as Azure's workers are (own working folder, code folder on
``sys.path``, ``sys.argv``, logs, ``EntryScript``), imports the entry script and calls
``init()``, answers ``ready`` (or ``init_failed`` and exit 72), then serves ``run``
frames until ``shutdown`` (``bye``, exit 0) or the end of the channel (exit 71 at
once, without ``shutdown()``: the agent is gone). A task's ``run`` frames are run in
order and answered with one ``done`` frame; meanwhile the worker's board
(:mod:`prsd.wire.board`) says which mini-batch is loading or running since when, and
keeps each finished one's outcome, for the agent's clocks and for a death. See
:mod:`prsd.wire.protocol` for the frames.

Signals: SIGINT is ignored (the agent owns it); SIGUSR1 dumps every thread's stack
into the error file (the agent sends it before killing a ``run()`` that timed out);
SIGTERM keeps its default action.

Standard library only, Python 3.7 syntax: this runs under the job's interpreter.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import time
from typing import TYPE_CHECKING, Any

from prsd.wire import frames, protocol
from prsd.wire.board import FINISHED, RUNNING, Board
from prsd.wire.fields import RecordError
from prsd.wire.hello import Hello
from prsd.wire.protocol import (
    EXIT_AGENT_GONE,
    EXIT_INIT_FAILED,
    EXIT_PROTOCOL_ERROR,
)
from prsd.worker.entry_script import configure_worker
from prsd.worker.logs import (
    ErrorFile,
    configure_root_logger,
    flush_std_streams,
    format_traceback,
    level_number,
    line_buffer_std_streams,
    one_line_error,
    traceback_tail,
)
from prsd.worker.runner import MiniBatchRunner
from prsd.worker.script import (
    Profiler,
    UserScript,
    import_entry_script,
    prepare_sys_path,
    script_file,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

PROFILING_MODULES = ("cProfile", "profile")
MIN_PYTHON = (3, 7)


class AgentGone(Exception):
    """The control channel closed (EOF, reset, broken pipe): nobody is listening."""


class Channel:
    """The worker's end of the control socketpair."""

    def __init__(self, fd: int) -> None:
        self.sock = socket.socket(fileno=fd)
        # Not inherited by programs the entry script starts (os.system, subprocess).
        self.sock.set_inheritable(False)
        self.sock.setblocking(True)
        self.reader = protocol.FrameReader(self.sock)

    def recv(self) -> dict[str, Any]:
        """The next frame.

        Raises:
            AgentGone: the channel closed.
            ProtocolError: the bytes are not a frame.
        """
        try:
            frame = self.reader.recv()
        except OSError as exc:
            raise AgentGone(str(exc)) from exc
        if frame is None:
            raise AgentGone("end of channel")
        return frame

    def send(self, message: dict[str, Any]) -> None:
        """Send one frame.

        Raises:
            AgentGone: the agent closed its end.
        """
        self.send_frame(protocol.encode(message))

    def send_frame(self, frame: bytes) -> None:
        """Send one frame already encoded.

        Raises:
            AgentGone: the agent closed its end.
        """
        try:
            self.sock.sendall(frame)
        except OSError as exc:
            raise AgentGone(str(exc)) from exc


class Worker:
    """One worker's life: hello, init, run frames, shutdown."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.doing = "init()"

    def serve(self) -> int:
        """Run the worker; return its exit code.

        Raises:
            ProtocolError: a malformed or unexpected frame.
            AgentGone: the channel closed before ``shutdown``.
        """
        hello = Hello.from_message(self.channel.recv())
        started_s = time.monotonic()
        try:
            errors = ErrorFile(hello.error_file, hello.process_name)
        except OSError as exc:
            return self._init_failed(exc, None)
        try:
            script = self._start(hello, errors)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - any failure of the user's import/init
            return self._init_failed(exc, errors)
        init_s = time.monotonic() - started_s
        board = Board.create()
        self.channel.send(frames.Ready(os.getpid(), init_s, board.fd).to_json())

        def started(index: int) -> None:
            board.mark(index, RUNNING, time.monotonic())

        return self._serve_frames(MiniBatchRunner(hello, script, errors, started), board)

    def _start(self, hello: Hello, errors: ErrorFile) -> UserScript:
        set_up_process(hello, errors)
        profiler = make_profiler(hello.profiling_module)
        self.doing = errors.current = f"init() (importing entry script {hello.entry_script})"
        try:
            if profiler is None:
                module = import_entry_script(hello.code_dir, hello.entry_script)
            else:
                module = profiler.runcall(import_entry_script, hello.code_dir, hello.entry_script)
            script = UserScript(module, profiler)
            self.doing = errors.current = "init()"
            script.init()
        finally:
            errors.current = ""
            flush_std_streams()
        return script

    def _init_failed(self, exc: BaseException, errors: ErrorFile | None) -> int:
        flush_std_streams()
        if errors is None:
            full = format_traceback(exc)
            sys.stderr.write(full)
            error_file = ""
        else:
            full = errors.write_exception(self.doing, exc)
            error_file = errors.path
        tail = traceback_tail(full)
        self.channel.send(frames.InitFailed(one_line_error(exc), tail, error_file).to_json())
        return EXIT_INIT_FAILED

    def _serve_frames(self, runner: MiniBatchRunner, board: Board) -> int:
        """Serve ``run`` frames until ``shutdown``: one ``done`` per task.

        Each mini-batch's outcome goes to the board as it finishes (and the mark says
        the next one is loading), so the agent wakes once per task, yet knows at any
        moment what its clocks need and what a death would lose. A task the board says
        is withdrawn as it would begin is read to its last frame, not run, and answered
        ``skipped``.
        """
        channel = self.channel
        outcomes: list[bytes] = []  # the task's outcomes so far, as JSON text
        skipping = False  # the task being read was withdrawn before it began
        while True:
            command = frames.decode_command(channel.recv())
            if isinstance(command, frames.Shutdown):
                runner.close()
                shut_down(runner.script, runner.hello, runner.errors)
                channel.send(frames.Bye().to_json())
                return 0
            if not outcomes and not skipping:
                skipping = board.withdrawn()
                if not skipping:
                    board.begin_task()
            if skipping:
                if command.last:
                    skipping = False
                    channel.send(frames.Skipped().to_json())
                continue
            last = len(command.mbs) - 1
            for k, mb in enumerate(command.mbs):
                attempt = runner.handle(mb, command.out, command.last and k == last)
                outcomes.append(board.journal(attempt.to_json()))
                board.mark(mb.index, FINISHED, time.monotonic())
            if command.last:
                # frames.Done's JSON, built from the journal's text of each outcome.
                body = b'{"ev":"done","outcomes":[' + b",".join(outcomes) + b"]}"
                outcomes = []
                channel.send_frame(protocol.encode_body(body))


def set_up_process(hello: Hello, errors: ErrorFile) -> None:
    """Folders, ``sys.path``, ``sys.argv``, logging, ``EntryScript`` and signals.

    Raises:
        RuntimeError: the interpreter is older than Python 3.7.
        OSError: a folder cannot be created or entered.
    """
    if sys.version_info < MIN_PYTHON:
        raise RuntimeError(
            f"prsd workers need Python {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or later; "
            f"{sys.executable} is {sys.version.split()[0]}"
        )
    os.makedirs(hello.working_dir, exist_ok=True)
    os.chdir(hello.working_dir)
    for folder in (hello.output_dir, hello.log_dir):
        os.makedirs(folder, exist_ok=True)
    prepare_sys_path(hello.code_dir, hello.entry_script)
    sys.argv = [script_file(hello.code_dir, hello.entry_script), *hello.argv]
    line_buffer_std_streams()
    configure_root_logger(level_number(hello.logging_level))
    configure_worker(hello)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    errors.dump_stacks_on(signal.SIGUSR1)


def make_profiler(module_name: str) -> Profiler | None:
    """A profiler for ``--profiling_module cProfile|profile``; None otherwise."""
    if module_name in PROFILING_MODULES:
        return Profiler(module_name)
    if module_name:
        logging.getLogger("prsd.worker").warning(
            "profiling module %r is not one of %s; not profiling", module_name, PROFILING_MODULES
        )
    return None


def shut_down(script: UserScript, hello: Hello, errors: ErrorFile) -> None:
    """Call ``shutdown()`` and write the profile; errors go to the error file."""
    errors.current = "shutdown()"
    try:
        script.shutdown()
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - logged; the worker still exits 0
        errors.write_exception("shutdown()", exc)
    finally:
        errors.current = ""
    flush_std_streams()
    if script.profiler is not None and hello.profile_file:
        try:
            script.profiler.dump(hello.profile_file)
        except Exception as exc:  # noqa: BLE001 - a lost profile must not fail the exit
            errors.write_exception("writing the profile", exc)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the agent on ``--fd``; return 0 after ``bye``, else exit at once.

    A worker that did not end with ``bye`` leaves with ``os._exit`` after flushing its
    logs: it does not wait for threads the entry script left running, nor run its
    ``atexit`` handlers, since the agent is gone or will replace it.
    """
    parser = argparse.ArgumentParser(prog="prsd-worker")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--parent-pid", type=int, default=None)
    args = parser.parse_args(argv)
    try:
        code = Worker(Channel(args.fd)).serve()
    except RecordError as exc:  # a malformed or unexpected frame (ProtocolError too)
        sys.stderr.write(f"prsd worker: protocol error: {exc}\n")
        code = EXIT_PROTOCOL_ERROR
    except AgentGone:
        code = EXIT_AGENT_GONE
    if code != 0:
        flush_std_streams()
        logging.shutdown()
        os._exit(code)
    return code
