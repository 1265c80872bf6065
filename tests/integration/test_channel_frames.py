"""The control channel's framing on real sockets and a real child process.

The agent reads as many frames at a time as have arrived and sends a task's ``run``
frames in one write; the worker cuts several frames out of one read. Frames that
arrive together, byte by byte, or before a malformed one must all come through in
order, and the fault must still break the worker once they are taken.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import textwrap
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from prsd.agent.proc import BrokenWorker, WorkerProcess, spawn_worker
from prsd.wire import frames
from prsd.wire.records import SUCCEEDED, MiniBatch
from prsd.worker import protocol
from tests.integration.worker_driver import WorkerPaths, files_mb, ready_worker

if TYPE_CHECKING:
    from pathlib import Path

# The child writes frames on its channel as told by argv[2], then waits to be stopped.
WRITER = """
    import json, os, struct, sys, time
    fd, mode = int(sys.argv[1]), sys.argv[2]
    def frame(obj):
        body = json.dumps(obj).encode()
        return struct.pack(">I", len(body)) + body
    done = lambda i: frame({"ev": "done", "outcome": {"index": i, "status": "succeeded"}})
    start = lambda i: frame({"ev": "start", "i": i})
    if mode == "together":
        os.write(fd, start(0) + done(0) + start(1) + done(1) + start(2))
    elif mode == "bytewise":
        for b in start(7) + done(7):
            os.write(fd, bytes([b]))
            time.sleep(0.001)
    elif mode == "garbage":
        os.write(fd, start(3) + done(3) + struct.pack(">I", 5) + b"nope!")
    elif mode == "torn":
        os.write(fd, start(4) + done(4)[:6])
        os._exit(0)
    elif mode == "echo":
        got = b""
        while got.count(b'"op"') < 3:
            got += os.read(fd, 65536)
        os.write(fd, frame({"ev": "ready", "pid": os.getpid(), "init_s": float(len(got))}))
    time.sleep(60)
"""


async def _spawn(tmp_path: Path, mode: str) -> WorkerProcess:
    script = tmp_path / "writer.py"
    script.write_text(textwrap.dedent(WRITER))
    proc = await spawn_worker(
        lambda fd: [sys.executable, str(script), str(fd), mode],
        env=dict(os.environ),
        cwd=tmp_path,
        stdout_path=tmp_path / "out.txt",
        stderr_path=tmp_path / "err.txt",
    )
    return proc


def _events(tmp_path: Path, mode: str, wanted: int) -> tuple[list[frames.Event], str]:
    """Take events until ``wanted`` came or the channel broke; the fault's text, if any."""

    async def main() -> tuple[list[frames.Event], str]:
        proc = await _spawn(tmp_path, mode)
        got: list[frames.Event] = []
        fault = ""
        try:
            with anyio.fail_after(20):
                while len(got) < wanted:
                    got += await proc.receive_ready()
                if mode in ("garbage", "torn"):
                    await proc.receive()
        except BrokenWorker as exc:
            fault = str(exc)
        finally:
            with anyio.CancelScope(shield=True):
                await proc.stop(0.0)
        return got, fault

    return anyio.run(main)


def _summary(events: list[frames.Event]) -> list[tuple[str, int]]:
    out = []
    for e in events:
        if isinstance(e, frames.Start):
            out.append(("start", e.index))
        elif isinstance(e, frames.Done):
            out.append(("done", e.outcome.index))
    return out


def test_frames_written_together_all_arrive_in_order(tmp_path: Path) -> None:
    events, fault = _events(tmp_path, "together", 5)
    assert fault == ""
    assert _summary(events) == [("start", 0), ("done", 0), ("start", 1), ("done", 1), ("start", 2)]
    assert all(e.outcome.status == SUCCEEDED for e in events if isinstance(e, frames.Done))


def test_a_frame_arriving_byte_by_byte_is_put_together(tmp_path: Path) -> None:
    events, fault = _events(tmp_path, "bytewise", 2)
    assert fault == ""
    assert _summary(events) == [("start", 7), ("done", 7)]


def test_frames_before_a_malformed_one_are_kept_then_the_worker_is_broken(
    tmp_path: Path,
) -> None:
    events, fault = _events(tmp_path, "garbage", 2)
    assert _summary(events) == [("start", 3), ("done", 3)]
    assert "undecodable frame" in fault


def test_a_channel_closed_inside_a_frame_breaks_the_worker_after_the_whole_ones(
    tmp_path: Path,
) -> None:
    events, fault = _events(tmp_path, "torn", 1)
    assert _summary(events) == [("start", 4)]
    assert "closed" in fault


def test_a_tasks_run_frames_go_out_in_one_write_and_all_arrive(tmp_path: Path) -> None:
    runs = [frames.Run(_mb(i), str(tmp_path / "out.bin"), i == 2).to_json() for i in range(3)]
    expected = len(b"".join(protocol.encode(r) for r in runs))

    async def main() -> frames.Event:
        proc = await _spawn(tmp_path, "echo")
        try:
            await proc.send_many(runs)
            with anyio.fail_after(20):
                return await proc.receive()
        finally:
            with anyio.CancelScope(shield=True):
                await proc.stop(0.0)

    reply = anyio.run(main)
    assert isinstance(reply, frames.Ready)
    assert reply.init_s == float(expected)  # the child counted every byte of the 3 frames


def _mb(index: int) -> MiniBatch:
    return MiniBatch(index, [f"f{index}"], 1)


# --- the worker's side: protocol.FrameReader on a real socketpair ----------------------


def test_the_worker_cuts_many_frames_out_of_one_read() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        messages = [{"op": "run", "n": i, "pad": "x" * (i * 40_000)} for i in range(4)]
        data = b"".join(protocol.encode(m) for m in messages)

        def send() -> None:
            ours.sendall(data)
            ours.shutdown(socket.SHUT_WR)

        reader = protocol.FrameReader(theirs)

        async def main() -> list[dict[str, object]]:
            got: list[dict[str, object]] = []
            async with anyio.create_task_group() as tg:
                tg.start_soon(anyio.to_thread.run_sync, send)
                while (m := await anyio.to_thread.run_sync(reader.recv)) is not None:
                    got.append(m)
            return got

        got = anyio.run(main)
    assert [m["n"] for m in got] == [0, 1, 2, 3]
    assert json.dumps(got) == json.dumps(messages)


def test_the_worker_sees_a_frame_cut_by_the_agents_end_as_a_protocol_error() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.sendall(protocol.encode({"op": "shutdown"}) + protocol.encode({"op": "run"})[:7])
        ours.shutdown(socket.SHUT_WR)
        reader = protocol.FrameReader(theirs)
        assert reader.recv() == {"op": "shutdown"}
        with pytest.raises(protocol.ProtocolError, match="inside a frame"):
            reader.recv()


# --- the worker's side: a done held for the next start (worker_driver, a real worker) ----

SIMPLE = """
    def init():
        pass

    def run(mini_batch):
        return mini_batch
"""


def _recv_all(sock: socket.socket) -> list[dict[str, Any]]:
    """Every frame until the worker closes the channel."""
    seen = []
    reader = protocol.FrameReader(sock)
    while (frame := reader.recv()) is not None:
        seen.append(frame)
    return seen


def test_a_files_task_sent_at_once_gets_every_start_and_done_in_order(tmp_path: Path) -> None:
    """A ``done`` may wait for the next ``start`` (one write): none is lost or reordered."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script(textwrap.dedent(SIMPLE))
    with ready_worker(paths) as worker:
        frames_out: list[dict[str, Any]] = [
            {"op": "run", "mb": files_mb(i, [f"/in/{i}"]), "out": str(paths.out), "close": i == 4}
            for i in range(5)
        ]
        frames_out.append({"op": "shutdown"})
        worker.sock.sendall(b"".join(protocol.encode(f) for f in frames_out))
        seen = _recv_all(worker.sock)
        assert worker.wait() == 0
    events = [(f["ev"], f.get("i", f.get("outcome", {}).get("index"))) for f in seen]
    expected = [(ev, i) for i in range(5) for ev in ("start", "done")]
    assert events == [*expected, ("bye", None)]
    assert all(f["outcome"]["status"] == "succeeded" for f in seen if f["ev"] == "done")


def test_a_done_held_for_the_next_start_still_goes_out_before_a_protocol_error(
    tmp_path: Path,
) -> None:
    paths = WorkerPaths.under(tmp_path)
    paths.write_script(textwrap.dedent(SIMPLE))
    with ready_worker(paths) as worker:
        run = {"op": "run", "mb": files_mb(0, ["/in/0"]), "out": str(paths.out), "close": True}
        body = b"{not json"
        worker.sock.sendall(protocol.encode(run) + protocol.HEADER.pack(len(body)) + body)
        seen = _recv_all(worker.sock)
        assert worker.wait() == protocol.EXIT_PROTOCOL_ERROR
    assert [f["ev"] for f in seen] == ["start", "done"]
    assert seen[1]["outcome"]["status"] == "succeeded"
