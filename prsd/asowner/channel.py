"""A request/response channel to the owner-side process: framed JSON, descriptors by SCM_RIGHTS.

Promise: over one connected ``AF_UNIX`` stream socket (a ``socketpair``), a message
is a 4-byte big-endian length and that many bytes of a JSON object; descriptors
travel with the first byte of their message (``SCM_RIGHTS``), so they arrive with the
header that announces them. One side asks, the other answers, one message at a time.
Every wait is bounded by the channel's timeout: a peer that hangs or dies never
blocks the caller longer than that.

Descriptors received are the receiver's to close; a message that carries more than
:data:`MAX_FDS` or a frame over :data:`MAX_FRAME` is refused (and what came with it
closed).

Errors: :class:`ChannelError` (a :class:`PrsdError`) for a peer that closed, did not
answer in time, or sent something that is not a message; the caller treats the peer
as gone.
"""

from __future__ import annotations

import array
import json
import os
import socket
import struct
from typing import TYPE_CHECKING, Any

from prsd.errors import PrsdError
from prsd.spool.jsonobject import NotAnObject, decode_object

if TYPE_CHECKING:
    from collections.abc import Sequence

MAX_FRAME = 1 << 20
MAX_FDS = 4
_HEADER = struct.Struct(">I")


class ChannelError(PrsdError):
    """The peer closed, hung past the timeout, or sent a malformed message."""


class Channel:
    """One end of the channel (``timeout``: seconds any single send or receive may take)."""

    def __init__(self, sock: socket.socket, timeout: float | None) -> None:
        self.sock = sock
        sock.settimeout(timeout)

    def send(self, message: dict[str, Any], fds: Sequence[int] = ()) -> None:
        """Send one message with ``fds`` (they stay open on this side).

        Raises:
            ChannelError: the peer is gone or the send did not finish in time.
        """
        body = json.dumps(message, separators=(",", ":")).encode()
        if len(body) > MAX_FRAME:
            raise ChannelError(f"a message of {len(body)} bytes is over {MAX_FRAME}")
        data = _HEADER.pack(len(body)) + body
        try:
            sent = socket.send_fds(self.sock, [data], list(fds)) if fds else 0
            self.sock.sendall(data[sent:])
        except TimeoutError:
            raise ChannelError("the peer did not take a message in time") from None
        except OSError as exc:
            raise ChannelError(f"the peer is gone ({exc.strerror or exc})") from None

    def recv(self) -> tuple[dict[str, Any], list[int]]:
        """The next message and the descriptors that came with it.

        Raises:
            ChannelError: the peer closed, did not answer in time, or sent garbage.
        """
        fds: list[int] = []
        try:
            head = self._read(_HEADER.size, fds)
            (size,) = _HEADER.unpack(head)
            if size > MAX_FRAME:
                raise ChannelError(f"a message of {size} bytes is over {MAX_FRAME}")
            body = self._read(size, fds)
            message = decode_object(body)
        except BaseException as exc:
            _close_all(fds)
            if isinstance(exc, ChannelError):
                raise
            if isinstance(exc, NotAnObject):
                raise ChannelError("a message that is not a JSON object") from None
            if isinstance(exc, ValueError):
                raise ChannelError(f"a message that is not JSON: {exc}") from None
            raise
        return message, fds

    def _read(self, size: int, fds: list[int]) -> bytes:
        chunks: list[bytes] = []
        left = size
        room = socket.CMSG_SPACE(MAX_FDS * array.array("i").itemsize)
        while left:
            try:
                data, ancdata, flags, _ = self.sock.recvmsg(left, room)
            except TimeoutError:
                raise ChannelError("the peer did not answer in time") from None
            except OSError as exc:
                raise ChannelError(f"the peer is gone ({exc.strerror or exc})") from None
            for level, kind, payload in ancdata:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    got = array.array("i")
                    got.frombytes(payload[: len(payload) - len(payload) % got.itemsize])
                    fds.extend(got)
            if flags & socket.MSG_CTRUNC:
                raise ChannelError(f"a message carried more than {MAX_FDS} descriptors")
            if not data:
                raise ChannelError("the peer closed the channel")
            chunks.append(data)
            left -= len(data)
        return b"".join(chunks)

    def call(
        self, message: dict[str, Any], fds: Sequence[int] = ()
    ) -> tuple[dict[str, Any], list[int]]:
        """Send a request and wait for its answer."""
        self.send(message, fds)
        return self.recv()

    def close(self) -> None:
        self.sock.close()


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
    fds.clear()
