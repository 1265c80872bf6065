"""The control channel's framing on real sockets and a real child process.

The agent reads as many frames at a time as have arrived and sends a task's ``run``
frames in one write; the worker cuts several frames out of one read. Frames that
arrive together, byte by byte, or before a malformed one must all come through in
order, and the fault must still break the worker once they are taken. A real worker
answers each task with one ``done`` frame, and its board says meanwhile what it runs
and keeps what it finished, also past a kill.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import textwrap
import time
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from prsd.agent.proc import BrokenWorker, WorkerProcess, spawn_worker
from prsd.wire import frames, protocol
from prsd.wire.board import FINISHED, RUNNING, Board
from prsd.wire.records import SUCCEEDED, MiniBatch
from tests.helpers import wait_until
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
    outcome = lambda i: {"index": i, "status": "succeeded"}
    done = lambda *i: frame({"ev": "done", "outcomes": [outcome(k) for k in i]})
    if mode == "together":
        os.write(fd, done(0, 1) + done(2) + done(3, 4))
    elif mode == "bytewise":
        for b in done(7, 8):
            os.write(fd, bytes([b]))
            time.sleep(0.001)
    elif mode == "garbage":
        os.write(fd, done(3) + struct.pack(">I", 5) + b"nope!")
    elif mode == "torn":
        os.write(fd, done(4) + done(5)[:6])
        os._exit(0)
    elif mode == "echo":
        got = b""
        while got.count(b'"op"') < 3:
            got += os.read(fd, 65536)
        ready = {"ev": "ready", "pid": os.getpid(), "init_s": float(len(got)), "board": 0}
        os.write(fd, frame(ready))
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


def _summary(events: list[frames.Event]) -> list[tuple[int, ...]]:
    return [tuple(o.index for o in e.outcomes) for e in events if isinstance(e, frames.Done)]


def test_frames_written_together_all_arrive_in_order(tmp_path: Path) -> None:
    events, fault = _events(tmp_path, "together", 3)
    assert fault == ""
    assert _summary(events) == [(0, 1), (2,), (3, 4)]
    assert all(
        o.status == SUCCEEDED for e in events if isinstance(e, frames.Done) for o in e.outcomes
    )


def test_a_frame_arriving_byte_by_byte_is_put_together(tmp_path: Path) -> None:
    events, fault = _events(tmp_path, "bytewise", 1)
    assert fault == ""
    assert _summary(events) == [(7, 8)]


def test_frames_before_a_malformed_one_are_kept_then_the_worker_is_broken(
    tmp_path: Path,
) -> None:
    events, fault = _events(tmp_path, "garbage", 1)
    assert _summary(events) == [(3,)]
    assert "undecodable frame" in fault


def test_a_channel_closed_inside_a_frame_breaks_the_worker_after_the_whole_ones(
    tmp_path: Path,
) -> None:
    events, fault = _events(tmp_path, "torn", 1)
    assert _summary(events) == [(4,)]
    assert "closed" in fault


def test_a_tasks_run_frames_go_out_in_one_write_and_all_arrive(tmp_path: Path) -> None:
    runs = [frames.Run((_mb(i),), str(tmp_path / "out.bin"), i == 2).to_json() for i in range(3)]
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


# --- the worker's side: one done per task, the board meanwhile (a real worker) ---------

SIMPLE = """
    def init():
        pass

    def run(mini_batch):
        return mini_batch
"""

# run() of the mini-batch of one path "/stuck" waits until killed, after a marker file.
STUCK = """
    import os, time

    def run(mini_batch):
        if mini_batch == ["/stuck"]:
            open(os.environ["AZUREML_BI_OUTPUT_PATH"] + "/stuck", "w").close()
            time.sleep(600)
        return mini_batch
"""


def _recv_all(sock: socket.socket) -> list[dict[str, Any]]:
    """Every frame until the worker closes the channel."""
    seen = []
    reader = protocol.FrameReader(sock)
    while (frame := reader.recv()) is not None:
        seen.append(frame)
    return seen


def _run(mbs: list[dict[str, Any]], out: Path, last: bool) -> dict[str, Any]:
    return {"op": "run", "mbs": mbs, "out": str(out), "last": last}


def test_the_channel_carries_one_done_frame_per_task(tmp_path: Path) -> None:
    """Two tasks, the first in two run frames: two done frames, each with every outcome."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script(textwrap.dedent(SIMPLE))
    mbs = [files_mb(i, [f"/in/{i}"]) for i in range(7)]
    with ready_worker(paths) as worker:
        frames_out = [
            _run(mbs[:3], paths.out, last=False),
            _run(mbs[3:5], paths.out, last=True),
            _run(mbs[5:], paths.out, last=True),
            {"op": "shutdown"},
        ]
        worker.sock.sendall(b"".join(protocol.encode(f) for f in frames_out))
        seen = _recv_all(worker.sock)
        assert worker.wait() == 0
    assert [f["ev"] for f in seen] == ["done", "done", "bye"]
    assert [[o["index"] for o in f["outcomes"]] for f in seen[:2]] == [[0, 1, 2, 3, 4], [5, 6]]
    assert all(o["status"] == "succeeded" for f in seen[:2] for o in f["outcomes"])
    done = frames.decode_event(seen[1])
    assert isinstance(done, frames.Done) and [o.index for o in done.outcomes] == [5, 6]
    assert paths.out.read_bytes() == b"".join(f"/in/{i}\n".encode() for i in range(7))


def test_the_board_shows_the_running_mini_batch_and_keeps_outcomes_past_a_kill(
    tmp_path: Path,
) -> None:
    """While run() of the third mini-batch hangs, the board says so and holds the two
    outcomes before it; a kill -9 loses neither, and no done frame came."""
    paths = WorkerPaths.under(tmp_path)
    paths.write_script(textwrap.dedent(STUCK))
    mbs = [files_mb(0, ["/a"]), files_mb(1, ["/b"]), files_mb(2, ["/stuck"]), files_mb(3, ["/c"])]
    with ready_worker(paths) as worker:
        board = Board.open_of(worker.proc.pid, worker.board_fd)
        before = time.monotonic()
        worker.send(_run(mbs, paths.out, last=True))
        wait_until((paths.output_dir / "stuck").exists, 30, "run() of the stuck mini-batch")
        mark = board.read_mark()
        assert mark is not None
        assert (mark.mb, mark.phase) == (2, RUNNING)
        assert before <= mark.since <= time.monotonic()
        os.kill(worker.proc.pid, signal.SIGKILL)
        assert worker.wait() == -signal.SIGKILL
        journal = board.read_journal()
        board.close()
        worker.sock.settimeout(5)
        assert _recv_all(worker.sock) == []
    assert [(o["index"], o["status"]) for o in journal] == [(0, "succeeded"), (1, "succeeded")]
    assert paths.out.read_bytes() == b"/a\n/b\n"


def test_a_protocol_error_mid_task_leaves_the_finished_outcomes_on_the_board(
    tmp_path: Path,
) -> None:
    paths = WorkerPaths.under(tmp_path)
    paths.write_script(textwrap.dedent(SIMPLE))
    with ready_worker(paths) as worker:
        board = Board.open_of(worker.proc.pid, worker.board_fd)
        body = b"{not json"
        first = protocol.encode(_run([files_mb(0, ["/in/0"])], paths.out, last=False))
        worker.sock.sendall(first + protocol.HEADER.pack(len(body)) + body)
        seen = _recv_all(worker.sock)
        assert worker.wait() == protocol.EXIT_PROTOCOL_ERROR
        journal = board.read_journal()
        mark = board.read_mark()
        board.close()
    assert seen == []
    assert [(o["index"], o["status"]) for o in journal] == [(0, "succeeded")]
    assert mark is not None and (mark.mb, mark.phase) == (0, FINISHED)
