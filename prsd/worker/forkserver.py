"""The fork server: a worker interpreter with the worker host imported, forking workers.

Started by the agent as ``PYTHON boot.py --fork-server --fd N --parent-pid P`` (so its
imports are isolated as every worker's are) with the environment a worker of that agent
gets; it imports the worker host, then serves requests on ``N``, a SOCK_SEQPACKET
socket to the agent. Standard library only, Python 3.7.

A request is one message: JSON ``{"id", "env", "cwd", "umask"}`` with three
descriptors attached (the worker's end of its channel, its stdout file, its stderr
file). The server forks; the child, before any user code:

- starts its own session (``setsid``), as ``start_new_session`` does;
- takes ``umask``, ``cwd``, stdin from ``/dev/null``, stdout and stderr from the
  descriptors, and exactly ``env`` as ``os.environ``;
- closes every other descriptor (the server's socket, the other requests' files);
- asks for SIGKILL when the server dies (the server itself dies with the agent);
- runs the worker host on the channel and leaves with ``os._exit``.

A request ``{"preload": [module, ...]}`` (no descriptors, no answer) asks the server to
import those modules now (a job's input loader's: pandas for a CSV job), so the workers
it forks from then on start with them; a module that fails to import is left to the
worker, which fails as it would have. Requests that come meanwhile wait their turn.

The server answers ``{"id", "pid"}`` once forked (``"error"`` instead when the fork
failed) and ``{"exit": pid, "code": C}`` when a child ends (C as ``Popen.returncode``:
negative for a signal). It exits when the agent's end closes. What it cannot give a
worker (another uid, another interpreter, other interpreter variables) is never asked
of it: the agent spawns those workers itself (``prsd.agent.forks``).
"""

from __future__ import annotations

import array
import json
import os
import select
import signal
import socket
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

MAX_MESSAGE = 1 << 20  # a request (a worker's environment) fits easily
FDS_PER_REQUEST = 3
EXIT_CHILD_FAILED = 70  # the child could not set itself up (its error is on its stderr)


def serve(fd: int, die_with_parent: Callable[[int | None], None]) -> int:
    """Import the worker host, then fork workers on request until the agent leaves;
    each child calls ``die_with_parent`` (``boot.die_with_parent``) with the server's pid."""
    import prsd.worker.host  # noqa: F401 - the point: every worker forked has it imported

    sock = socket.socket(fileno=fd)
    sock.set_inheritable(False)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the agent's to handle
    while True:
        ready, _, _ = select.select([sock.fileno(), wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
            _report_exits(sock)
        if sock.fileno() in ready:
            try:
                data, fds = _receive(sock)
            except OSError:
                return 0
            if not data:
                return 0  # the agent closed its end
            _answer(sock, data, fds, (sock.fileno(), wake_r, wake_w), die_with_parent)


def _receive(sock: socket.socket) -> tuple[bytes, list[int]]:
    fds = array.array("i")
    data, ancdata, _flags, _addr = sock.recvmsg(
        MAX_MESSAGE, socket.CMSG_SPACE(FDS_PER_REQUEST * fds.itemsize)
    )
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            usable = len(payload) - len(payload) % fds.itemsize
            fds.frombytes(payload[:usable])
    return data, list(fds)


def _answer(
    sock: socket.socket,
    data: bytes,
    fds: list[int],
    own: tuple[int, ...],
    die_with_parent: Callable[[int | None], None],
) -> None:
    request_id: Any = None
    try:
        request = json.loads(data)
        if "preload" in request:
            _preload(request["preload"])
            for fd in fds:
                os.close(fd)
            return
        request_id = request["id"]
        if len(fds) != FDS_PER_REQUEST:
            raise ValueError(f"{len(fds)} descriptors, not {FDS_PER_REQUEST}")
        server = os.getpid()
        pid = os.fork()
        if pid == 0:
            _child(request, fds, own, server, die_with_parent)  # never returns
        reply: dict[str, Any] = {"id": request_id, "pid": pid}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        reply = {"id": request_id, "error": f"{type(exc).__name__}: {exc}"}
    finally:
        for fd in fds:
            os.close(fd)
    sock.send(json.dumps(reply).encode())


def _preload(modules: Any) -> None:
    """Import ``modules`` (names); one that fails is skipped (its worker meets the error)."""
    for name in modules if isinstance(modules, list) else ():
        _import_quietly(str(name))


def _import_quietly(name: str) -> None:
    import importlib

    try:
        importlib.import_module(name)
    except Exception:  # noqa: BLE001, S110 - the worker imports it again and says why
        pass


def _report_exits(sock: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        sock.send(json.dumps({"exit": pid, "code": _exit_code(status)}).encode())


def _exit_code(status: int) -> int:
    """A wait status as ``subprocess`` gives a return code: ``-N`` for signal N."""
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _child(
    request: dict[str, Any],
    fds: list[int],
    own: tuple[int, ...],
    server: int,
    die_with_parent: Callable[[int | None], None],
) -> None:
    """(In the forked child.) Become the worker of ``request``; never returns."""
    code = EXIT_CHILD_FAILED
    try:
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        channel, out, err = fds
        os.setsid()
        os.dup2(out, 1)
        os.dup2(err, 2)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        keep = {0, 1, 2, channel}
        for fd in {*own, out, err, null}:
            if fd not in keep:
                os.close(fd)
        os.umask(int(request["umask"]))
        os.chdir(str(request["cwd"]))
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in request["env"].items()})
        die_with_parent(server)
        from prsd.worker.host import main as host_main

        argv = ["--fd", str(channel), "--parent-pid", str(server)]
        sys.argv = [sys.argv[0], *argv]
        code = host_main(argv)
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException as exc:  # noqa: BLE001 - the child must never return to the server
        try:
            os.write(2, f"prsd worker: cannot start from the fork server: {exc!r}\n".encode())
        except OSError:
            pass
    os._exit(code)
