"""The owner side's channel: framed JSON with descriptors, and every wait bounded."""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from typing import TYPE_CHECKING

import pytest

from prsd.asowner.channel import MAX_FRAME, Channel, ChannelError

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture
def pair() -> Iterator[tuple[Channel, Channel]]:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    left, right = Channel(a, 2.0), Channel(b, 2.0)
    yield left, right
    left.close()
    right.close()


def test_message_and_descriptors_cross(pair: tuple[Channel, Channel]) -> None:
    """A descriptor sent is a working descriptor on the other side, on the same pipe."""
    left, right = pair
    r, w = os.pipe()
    try:
        left.send({"op": "x", "n": [1, "two"]}, [w])
        message, fds = right.recv()
        assert message == {"op": "x", "n": [1, "two"]}
        assert len(fds) == 1 and fds[0] != w
        os.write(fds[0], b"through")
        os.close(fds[0])
        assert os.read(r, 100) == b"through"
    finally:
        os.close(r)
        os.close(w)


def test_many_messages_keep_their_boundaries(pair: tuple[Channel, Channel]) -> None:
    left, right = pair
    big = "x" * 300_000  # more than one socket buffer: sent while the peer reads

    def send_all() -> None:
        for i in range(5):
            left.send({"i": i, "big": big})

    sender = threading.Thread(target=send_all)
    sender.start()
    got = [right.recv()[0]["i"] for _ in range(5)]
    sender.join()
    assert got == list(range(5))


def test_a_closed_peer_is_an_error(pair: tuple[Channel, Channel]) -> None:
    left, right = pair
    right.close()
    with pytest.raises(ChannelError, match="closed|gone"):
        left.call({"op": "ping"})


def test_a_silent_peer_is_an_error_in_bounded_time() -> None:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    left = Channel(a, 0.5)
    try:
        start = time.monotonic()
        with pytest.raises(ChannelError, match="did not answer in time"):
            left.call({"op": "ping"})
        assert time.monotonic() - start < 2.0
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (struct.pack(">I", MAX_FRAME + 1), "over"),
        (struct.pack(">I", 5) + b"nope!", "not JSON"),
        (struct.pack(">I", 2) + b"[]", "not a JSON object"),
    ],
)
def test_garbage_is_refused(pair: tuple[Channel, Channel], raw: bytes, why: str) -> None:
    left, right = pair
    left.sock.sendall(raw)
    with pytest.raises(ChannelError, match=why):
        right.recv()


def test_too_many_descriptors_are_refused_and_closed(pair: tuple[Channel, Channel]) -> None:
    left, right = pair
    pipes = [os.pipe() for _ in range(6)]
    try:
        left.send({"op": "x"}, [w for _, w in pipes])
        with pytest.raises(ChannelError, match="more than"):
            right.recv()
    finally:
        for r, w in pipes:
            os.close(r)
            os.close(w)
