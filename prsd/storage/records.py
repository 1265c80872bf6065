"""Task and result records: frozen dataclasses and their byte encodings.

A task file is one JSON object naming the job and its mini-batches; each mini-batch
carries an opaque ``payload`` that the splitter made and the worker's loader reads
(a list of paths, a byte range of a CSV, row groups of a Parquet file, ...).

A result file is what one attempt of one task produced on one node::

    <payload of mini-batch a><payload of b>...<metadata JSON><16-byte footer>

The footer is ``b"PRSDRES1"`` and the metadata length (8 bytes, big-endian), so the
leader reads the metadata with two small reads at the end of the file and the merge
copies payload byte ranges without parsing them. A torn or truncated file has no
valid footer and is treated as missing (the attempt's results are not used).

The job's owner can write in the folder that holds a result file (the worker appends
to it as the owner), so the leader, running as root, reads one by descriptor only:
opened once without following a link, checked to be a regular file, and the payload
later read only from a descriptor proven to be the same file (device and inode).
A link or a swapped file raises :class:`UntrustedResult`: nothing is copied from it.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import struct
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from prsd.errors import SpoolError

if TYPE_CHECKING:
    from pathlib import Path

TASK_FORMAT = 1
RESULT_MAGIC = b"PRSDRES1"
FOOTER = struct.Struct(">8sQ")

# Attempt statuses, as written in processed_mini-batches.csv (SPEC section 8).
SUCCEEDED = "succeeded"
FAILED = "failed"
TIMEOUT = "timeout"
CRASHED = "crashed"
OOM = "oom"
REQUEUED = "requeued"
ATTEMPT_STATUSES = (SUCCEEDED, FAILED, TIMEOUT, CRASHED, OOM, REQUEUED)


@dataclass(frozen=True)
class MiniBatch:
    """One mini-batch as the leader planned it.

    Attributes:
        index: position in input order (the mini-batch id).
        payload: what the worker's loader reads (JSON value; shape depends on input).
        items: item count when known at planning (files), else -1 (tables: rows).
        key: the partition key value (``partition_keys`` jobs), else None.
    """

    index: int
    payload: Any
    items: int = -1
    key: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"i": self.index, "p": self.payload, "n": self.items}
        if self.key is not None:
            out["k"] = self.key
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> MiniBatch:
        return cls(int(obj["i"]), obj["p"], int(obj.get("n", -1)), obj.get("k"))


@dataclass(frozen=True)
class TaskBody:
    """The content of a task file."""

    job_id: str
    kind: str
    mini_batches: tuple[MiniBatch, ...]

    def encode(self) -> bytes:
        obj = {
            "v": TASK_FORMAT,
            "job": self.job_id,
            "kind": self.kind,
            "mbs": [mb.to_json() for mb in self.mini_batches],
        }
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()

    @classmethod
    def decode(cls, data: bytes) -> TaskBody:
        """Parse a task file.

        Raises:
            SpoolError: the bytes are not a task file of a known format.
        """
        try:
            obj = json.loads(data)
            if obj.get("v") != TASK_FORMAT:
                raise SpoolError(f"task file format {obj.get('v')!r} is not {TASK_FORMAT}")
            mbs = tuple(MiniBatch.from_json(m) for m in obj["mbs"])
            return cls(str(obj["job"]), str(obj["kind"]), mbs)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise SpoolError(f"unreadable task file: {exc}") from exc


@dataclass(frozen=True)
class Outcome:
    """What one attempt of one mini-batch did (one row of processed_mini-batches.csv).

    ``offset``/``length`` locate the mini-batch's append_row bytes in the result file.
    """

    index: int
    status: str
    items: int = 0
    succeeded_items: int = 0
    failed_items: int = 0
    offset: int = 0
    length: int = 0
    process_name: str = ""
    pid: int = 0
    start_time: str = ""
    elapsed_s: float = 0.0
    process_time_s: float = 0.0
    run_method_s: float = 0.0
    error: str = ""
    traceback_tail: str = ""
    error_file: str = ""
    header: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in ("", 0, 0.0, {})} | {
            "index": self.index,
            "status": self.status,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Outcome:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in obj.items() if k in known})


@dataclass(frozen=True)
class ResultMeta:
    """The metadata at the end of a result file."""

    task: str
    node_id: str
    outcomes: tuple[Outcome, ...]

    def encode(self) -> bytes:
        obj = {"task": self.task, "node": self.node_id, "mbs": [o.to_json() for o in self.outcomes]}
        meta = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
        return meta + FOOTER.pack(RESULT_MAGIC, len(meta))

    @classmethod
    def decode(cls, meta: bytes) -> ResultMeta:
        obj = json.loads(meta)
        outcomes = tuple(Outcome.from_json(o) for o in obj["mbs"])
        return cls(str(obj["task"]), str(obj["node"]), outcomes)


class UntrustedResult(SpoolError):
    """A result file that is a link, not a regular file, or not the one read before."""


@dataclass(frozen=True)
class ResultFile:
    """A result file's metadata and the identity (device, inode) it was read from."""

    meta: ResultMeta
    ident: tuple[int, int]


def open_result(path: Path, ident: tuple[int, int] | None = None) -> int | None:
    """A read descriptor on the result file ``path``; None if it is absent.

    Opened once with ``O_NOFOLLOW | O_NONBLOCK`` and checked with ``fstat``: a link in
    its place is never followed, a FIFO never blocks, and with ``ident`` the file must be
    the very one (device, inode) an earlier read checked.

    Raises:
        UntrustedResult: a symlink, not a regular file, or another file than ``ident``.
        OSError: any other open error.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UntrustedResult(
                f"result file {path} is a symbolic link, not a file an agent wrote; it was not read"
            ) from None
        raise
    info = os.fstat(fd)
    problem = ""
    if not stat.S_ISREG(info.st_mode):
        problem = "is not a regular file"
    elif ident is not None and (info.st_dev, info.st_ino) != ident:
        problem = "was replaced after the leader read it"
    if problem:
        os.close(fd)
        raise UntrustedResult(f"result file {path} {problem}; it was not read")
    return fd


def read_result(path: Path) -> ResultFile | None:
    """Read a result file's metadata through one descriptor; None if missing, torn or not a result.

    The payload ranges the metadata names are later read from the same file only
    (:func:`open_result` with :attr:`ResultFile.ident`), never from whatever the name
    leads to then.

    Raises:
        UntrustedResult: see :func:`open_result`.
        OSError: a read error other than the file being absent.
    """
    fd = open_result(path)
    if fd is None:
        return None
    try:
        info = os.fstat(fd)
        meta = _read_meta(fd, info.st_size)
    finally:
        os.close(fd)
    if meta is None:
        return None
    return ResultFile(meta, (info.st_dev, info.st_ino))


def read_result_meta(path: Path) -> ResultMeta | None:
    """The metadata of a result file (see :func:`read_result`); None if missing or torn.

    Raises:
        UntrustedResult: see :func:`open_result`.
        OSError: a read error other than the file being absent.
    """
    found = read_result(path)
    return found.meta if found is not None else None


def _read_meta(fd: int, size: int) -> ResultMeta | None:
    if size < FOOTER.size:
        return None
    magic, meta_len = FOOTER.unpack(os.pread(fd, FOOTER.size, size - FOOTER.size))
    if magic != RESULT_MAGIC or meta_len > size - FOOTER.size:
        return None
    meta = os.pread(fd, meta_len, size - FOOTER.size - meta_len)
    try:
        result = ResultMeta.decode(meta)
    except (ValueError, KeyError, TypeError):
        return None
    payload_end = size - FOOTER.size - len(meta)
    if any(o.offset + o.length > payload_end for o in result.outcomes):
        return None
    return result
