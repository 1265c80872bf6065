"""The owner-side process: ``python -m prsd.asowner.server FD``, started by ``spawn_as``.

Promise: it serves the requests of one job's leader on the socket ``FD`` (one end of
a ``socketpair``, :mod:`prsd.asowner.channel`), one at a time, each with the
operations of :mod:`prsd.asowner.outputs` and :mod:`prsd.asowner.removal` under its
own ids (the job owner's), and
exits when the leader closes the socket. Descriptors it opens are sent back and
closed here; descriptors it is sent are closed after the request. Its umask is
``022`` (a job's output is readable as a user's usual files are); spawn_as's ``077``
would hide outputs from the owner's group.

Answers: ``{"ok": true, ...}`` with descriptors, or ``{"ok": false, "error": LINE,
"errno": N}`` for a refusal; a request it does not know is refused the same way. It
never raises on a request: only a broken channel ends it.
"""

from __future__ import annotations

import os
import socket
import sys
from typing import Any

from prsd.asowner import outputs, removal
from prsd.asowner.channel import Channel, ChannelError
from prsd.errors import PrsdError

Answer = tuple[dict[str, Any], list[int]]


def handle(request: dict[str, Any], fds: list[int]) -> Answer:
    """Do one request; what it opened comes back as descriptors.

    Raises:
        OwnerOpError, KeyError, TypeError, ValueError: a refused or malformed request.
    """
    op = request.get("op")
    if op == "open_output":
        dir_fd, fd = outputs.open_output(
            str(request["anchor"]),
            _parts(request),
            str(request["tmp"]),
            create=bool(request["create"]),
        )
        return {"ok": True}, [dir_fd, fd]
    if op == "publish":
        outputs.publish(
            fds[0], str(request["anchor"]), _parts(request), str(request["tmp"]),
            str(request["final"]), durable=bool(request["durable"]),
        )  # fmt: skip
        return {"ok": True}, []
    if op == "make_folder":
        outputs.make_folder(str(request["anchor"]), _parts(request))
        return {"ok": True}, []
    if op == "discard":
        outputs.discard(fds[0], str(request["tmp"]))
        return {"ok": True}, []
    if op == "open_read":
        return {"ok": True}, [outputs.open_read(str(request["path"]))]
    if op == "empty":
        return {"ok": True, "left": removal.empty_folder(fds[0])}, []
    if op == "ping":
        return {"ok": True, "uid": os.geteuid()}, []
    raise ValueError(f"unknown request {op!r}")


def _parts(request: dict[str, Any]) -> list[str]:
    parts = request["parts"]
    if not isinstance(parts, list):
        raise TypeError("parts is not a list")
    return [str(p) for p in parts]


def serve(channel: Channel) -> None:
    """Answer requests until the leader closes the channel."""
    while True:
        try:
            request, fds = channel.recv()
        except ChannelError:
            return
        opened: list[int] = []
        try:
            answer, opened = handle(request, fds)
        except (PrsdError, OSError, KeyError, TypeError, ValueError, IndexError) as exc:
            code = getattr(exc, "code", 0) or getattr(exc, "errno", 0) or 0
            line = exc.one_line() if isinstance(exc, PrsdError) else f"{type(exc).__name__}: {exc}"
            answer = {"ok": False, "error": line, "errno": code}
        try:
            channel.send(answer, opened)
        except ChannelError:
            return
        finally:
            for fd in [*fds, *opened]:
                os.close(fd)


def main(argv: list[str]) -> int:
    os.umask(0o022)
    sock = socket.socket(fileno=int(argv[1]))
    serve(Channel(sock, None))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
