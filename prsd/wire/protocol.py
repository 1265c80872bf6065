"""The agent <-> worker control channel: length-prefixed JSON frames on a socketpair.

The channel is a dedicated file descriptor passed to the worker (``--fd N``), never
stdout: the user's ``print()``, the root logger and stderr go to log files, so
nothing the entry script writes can corrupt the protocol. Any framing error is a
broken worker: the agent kills it and starts a replacement.

Both sides frame and read with this module: :func:`encode` writes a frame,
:class:`FrameBuffer` is the one reader (the worker's :class:`FrameReader` and the
agent's ``prsd.agent.proc`` feed it), and a frame that is not one raises
:class:`ProtocolError`. It runs inside workers under the job's interpreter, so it uses
only the standard library and Python 3.7 syntax.

Messages, agent -> worker (``op``):

``hello``     first frame; the worker's whole configuration (see ``HELLO_KEYS``).
``run``       ``{"op": "run", "mbs": [<MiniBatch JSON>, ...], "out": <path>, "last": bool}``:
              run a task's mini-batches in order, appending their append_row bytes
              to ``out`` (opened in append mode); ``last``: the task ends with them
              (close ``out``, answer ``done``). A task too big for one frame comes in
              several (sent in one write), all but the last with ``last`` false.
``shutdown``  call ``shutdown()``, answer ``bye`` and exit 0.

Messages, worker -> agent (``ev``):

``ready``        ``init()`` returned: ``{"ev": "ready", "pid": int, "init_s": float,
                 "board": fd}``; ``board`` is the worker's descriptor of its board
                 (:mod:`prsd.wire.board`), which the agent opens as
                 ``/proc/<pid>/fd/<board>``.
``init_failed``  import or ``init()`` raised: ``{"error", "traceback_tail", "error_file"}``;
                 the worker exits with code 72 (Azure's "init failed") after sending it.
``done``         ``{"ev": "done", "outcomes": [<Outcome JSON>, ...]}``: the task's
                 mini-batches, in order (see prsd.wire.records.Outcome; status
                 ``succeeded`` or ``failed``; offset/length locate the bytes in ``out``).
                 One per task. Meanwhile the board says which mini-batch is loading or
                 in ``run()`` since when (the agent's clocks) and keeps each finished
                 one's outcome (what a worker that dies or is killed leaves).
``bye``          ``shutdown()`` finished; the worker exits 0 right after.

Exit codes of a worker: 0 after ``bye``; ``EXIT_INIT_FAILED`` after ``init_failed``;
``EXIT_PROTOCOL_ERROR`` on a malformed or unexpected frame (reason on stderr);
``EXIT_AGENT_GONE`` when the channel closed (EOF, broken pipe) or the agent was gone
before the worker started; a negative code is a signal (timeout kill, OOM kill).
``hello`` and its keys are built and checked by :class:`prsd.wire.hello.Hello`.
"""

from __future__ import annotations

import json
import struct
from typing import TYPE_CHECKING, Any

from prsd.wire.fields import RecordError

if TYPE_CHECKING:
    import socket

HEADER = struct.Struct(">I")
MAX_FRAME_BYTES = 64 * 1024 * 1024

# Keys of the ``hello`` frame. Paths are absolute.
HELLO_KEYS = (
    "job_id",  # str
    "node_id",  # str
    "process_name",  # "process000"
    "code_dir",  # the job's code snapshot; put first on sys.path
    "entry_script",  # "score.py", "sub/score.py" (relative to code_dir) or "pkg.module"
    "argv",  # list[str]: sys.argv[1:] for the script (program_arguments, paths absolute)
    "working_dir",  # the worker's own folder; the worker chdirs into it
    "output_dir",  # EntryScript().output_dir, AZUREML_BI_OUTPUT_PATH
    "log_dir",  # EntryScript().log_dir: logs/user/entry_script_log/<node>/
    "entry_log_file",  # <log_dir>/<process>.log.txt
    "error_file",  # logs/user/error/<node>/<process>.txt: tracebacks, stack dumps
    "logging_level",  # "INFO" | "WARNING" | "DEBUG" ...
    "kind",  # input kind: "files" | "csv" | "jsonl" | "parquet" | ... (the loader)
    "output_action",  # "append_row" | "summary_only"
    "append_row_format",  # "text" | "parquet"
    "to_csv",  # dict: DataFrame.to_csv keyword overrides (parallel_run_step.settings.json)
    "dataframe_header",  # bool: --append_row_dataframe_header
    "profiling_module",  # "" | "cProfile" | "profile"
    "profile_file",  # logs/sys/node/<node>/<process>.profile
    "config",  # dict: the resolved job settings (EntryScript().config)
    "max_result_rows",  # int: elements one run() may return (PRSD_MAX_RESULT_ROWS)
    "max_result_bytes",  # int: append_row bytes of one mini-batch (PRSD_MAX_RESULT_BYTES)
)

EXIT_INIT_FAILED = 72  # import or init() of the entry script raised (Azure's code)
EXIT_PROTOCOL_ERROR = 70  # malformed or unexpected frame: an agent/worker mismatch
EXIT_AGENT_GONE = 71  # the channel closed before ``shutdown``: the agent is gone


class ProtocolError(RecordError):
    """The peer sent something that is not a valid frame (the messages themselves are
    :mod:`prsd.wire.frames`, whose decoders raise :class:`RecordError`)."""


def encode(message: dict[str, Any]) -> bytes:
    """One frame: 4-byte big-endian length, then compact UTF-8 JSON."""
    body = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if len(body) > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {len(body)} bytes exceeds {MAX_FRAME_BYTES}")
    return HEADER.pack(len(body)) + body


def encode_body(body: bytes) -> bytes:
    """One frame of a body already in compact UTF-8 JSON (see :func:`encode`)."""
    if len(body) > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {len(body)} bytes exceeds {MAX_FRAME_BYTES}")
    return HEADER.pack(len(body)) + body


def decode(body: bytes) -> dict[str, Any]:
    """Parse a frame body (without its length prefix)."""
    try:
        message = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProtocolError(f"undecodable frame: {exc}") from exc
    if not isinstance(message, dict):
        raise ProtocolError("frame is not a JSON object")
    return message


def frame_length(header: bytes) -> int:
    """The body length announced by a 4-byte header."""
    (length,) = HEADER.unpack(header)
    if length > MAX_FRAME_BYTES:
        raise ProtocolError(f"announced frame of {length} bytes exceeds {MAX_FRAME_BYTES}")
    return int(length)


class FrameBuffer:
    """The one frame reader of the channel, for both sides: bytes in as they arrive
    (:meth:`feed`), whole frames out, decoded (:meth:`next`). It does no I/O: the
    worker fills it from a blocking socket (:class:`FrameReader`), the agent from its
    asynchronous stream (``prsd.agent.proc``). Many frames that came in one read cost
    one copy of the buffer, not one each."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._start = 0  # where the first frame not yet taken begins

    def feed(self, data: bytes) -> None:
        """Append bytes read from the channel."""
        if self._start:
            del self._buffer[: self._start]
            self._start = 0
        self._buffer += data

    def _frame_end(self) -> int | None:
        """Where the first whole frame not yet taken ends (None: none is whole yet).

        Raises:
            ProtocolError: its header announces more than ``MAX_FRAME_BYTES``.
        """
        buf, start = self._buffer, self._start
        if len(buf) - start < HEADER.size:
            return None
        end = start + HEADER.size + frame_length(bytes(buf[start : start + HEADER.size]))
        return end if len(buf) >= end else None

    def has_frame(self) -> bool:
        """A whole frame is buffered: :meth:`next` returns it.

        Raises:
            ProtocolError: the next frame's header announces too many bytes.
        """
        return self._frame_end() is not None

    def next(self) -> dict[str, Any] | None:
        """The next whole frame, decoded, or None until more bytes arrive.

        Raises:
            ProtocolError: the bytes are not a frame (the frame is taken all the same:
                the channel is broken from then on).
        """
        end = self._frame_end()
        if end is None:
            return None
        body = bytes(self._buffer[self._start + HEADER.size : end])
        self._start = end
        return decode(body)

    @property
    def partial(self) -> bool:
        """Bytes of a frame not yet whole are buffered."""
        return len(self._buffer) > self._start


class FrameReader:
    """Worker side: frames from a blocking socket, read as many bytes at a time as have
    arrived (a task's ``run`` frames come in one write), so most frames cost no system
    call of their own."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._frames = FrameBuffer()

    def has_frame(self) -> bool:
        """A whole frame is already read: :meth:`recv` will not block."""
        return self._frames.has_frame()

    def recv(self) -> dict[str, Any] | None:
        """The next frame, or None when the agent closed the channel between frames.

        Raises:
            ProtocolError: the bytes are not a frame, or the channel closed inside one.
            OSError: the socket failed.
        """
        while True:
            message = self._frames.next()
            if message is not None:
                return message
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                if self._frames.partial:
                    raise ProtocolError("channel closed inside a frame")
                return None
            self._frames.feed(chunk)
