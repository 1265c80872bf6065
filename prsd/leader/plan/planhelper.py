"""The job's input planner: the process that reads a job's input with the owner's ids.

``python -m prsd.leader.plan.planhelper`` is started by the leader, one per job, with the
job owner's uid, gid and groups (:func:`prsd.asowner.spawn.spawn_as`), so the kernel
decides what of the input it may list and read. It reads one request (JSON) on
stdin: the job's spec, its folder in the spool, and for a retry the retry's plan
and kept results. It plans exactly what :func:`planned_batches` plans in the
leader's own process (a job the daemon owns), and writes every mini-batch, skipped
path and the retry's order to stdout as :mod:`prsd.leader.plan.planwire` records; a
record ``alive`` every :data:`ALIVE_S` seconds while nothing else is sent. It writes
only under the job's ``partitions/`` and ``mltable/`` folders, which the leader made
for it.

Errors: a plan that fails is sent as an ``error`` record with its one-line reason
(exit status 1); a leader that stops reading (a write fails) ends the process.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from prsd.errors import PrsdError
from prsd.inputsplit.planner import plan_mini_batches
from prsd.jobspec import JobSpec
from prsd.leader.plan.planwire import Record, encode
from prsd.spool.jsonobject import decode_object

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from prsd.inputsplit.split import SkipReporter
    from prsd.leader.rerun.retryjob import RetryInput
    from prsd.spool.retryrecords import RetryOrder
    from prsd.wire.records import MiniBatch

ALIVE_S = 2.0
MODULE = "prsd.leader.plan.planhelper"


def planned_batches(
    spec: JobSpec,
    job_folder: Path | None,
    retry: RetryInput | None,
    on_skip: SkipReporter | None,
    on_order: Callable[[RetryOrder], None],
) -> Iterator[MiniBatch]:
    """The job's mini-batches: its split, and for a retry only what runs again."""
    mbs = plan_mini_batches(spec, on_skip, job_folder=job_folder)
    if retry is None:
        return mbs
    from prsd.leader.rerun.retryjob import retry_batches  # only a retry pays for its imports

    return retry_batches(retry, spec, mbs, on_order)


def encode_request(spec: JobSpec, job_folder: Path | None, retry: RetryInput | None) -> bytes:
    """The request the leader writes on the helper's stdin."""
    obj = {
        "spec": spec.to_json(),
        "job_folder": None if job_folder is None else str(job_folder),
        "retry": None if retry is None else retry.to_obj(),
    }
    return json.dumps(obj).encode()


class _Out:
    """stdout, written whole records at a time by the planner and the alive ticker."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.lock = threading.Lock()
        self.sent = threading.Event()

    def send(self, record: Record) -> None:
        with self.lock:
            self.stream.write(encode(record))
            self.stream.flush()
        self.sent.set()

    def tick(self) -> None:
        """Send ``alive`` when nothing was sent for ``ALIVE_S``; end the process on a
        broken pipe (the leader is gone)."""
        while True:
            if not self.sent.wait(ALIVE_S):
                try:
                    self.send(Record("alive"))
                except OSError:
                    os._exit(3)
            self.sent.clear()


def run(request: bytes, out: _Out) -> int:
    """Plan the request's job, sending records; the exit status."""
    obj = decode_object(request)
    spec = JobSpec.from_json(obj["spec"])
    folder = Path(obj["job_folder"]) if obj.get("job_folder") else None
    retry = None
    if obj.get("retry"):
        from prsd.leader.rerun.retryjob import RetryInput

        retry = RetryInput.from_obj(obj["retry"])

    def skip(path: str, why: str) -> None:
        out.send(Record("skip", path=path, why=why))

    def order(o: RetryOrder) -> None:
        out.send(Record("order", order=o.to_obj()))

    try:
        for mb in planned_batches(spec, folder, retry, skip, order):
            out.send(Record("mb", mb=mb))
    except PrsdError as exc:
        out.send(Record("error", msg=exc.one_line()))
        return 1
    except OSError as exc:
        out.send(Record("error", msg=f"cannot read input {spec.input.name}: {exc}"))
        return 1
    out.send(Record("end"))
    return 0


def main() -> int:
    request = sys.stdin.buffer.read()
    out = _Out(sys.stdout.buffer)
    threading.Thread(target=out.tick, daemon=True).start()
    try:
        return run(request, out)
    except BrokenPipeError:
        return 3
    except Exception as exc:  # noqa: BLE001 - reported to the leader, which fails the job
        out.send(Record("error", msg=f"the input planner failed: {type(exc).__name__}: {exc}"))
        return 1


if __name__ == "__main__":
    sys.exit(main())
