"""The results an earlier job leaves for a retry: what each covered, and where its bytes are.

Invariant: a kept result names the inputs it covered as the task file planned them
(never by mini-batch index alone), the job that produced it, when that job took its
input in, and a byte range of a committed result file inside that job's folder. Only
attempts that succeeded count: a job's own mini-batches, and for file lists the
succeeded probes of bisection (their halves ran alone and succeeded, so their rows are
that half's output); probes are never counted as succeeded mini-batches. A retry's
own list is its results plus every result it was given to keep, so a retry of a retry
keeps results of every job in the chain.

Errors: a result or task file that cannot be read is left out (its inputs run
again). Owners: a retry may keep only results of jobs of its own owner
(:func:`check_same_owner`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prsd.errors import PrsdError
from prsd.retryplan.plan import Kept, items_digest, payload_identity
from prsd.retryplan.retryfiles import read_trusted
from prsd.spool.jobfolder import JobFolder
from prsd.spool.jobowner import JobOwner, OwnerRecordError, owner
from prsd.spool.jsonobject import decode_object
from prsd.spool.layout import (
    PROBE_ATTEMPT_BASE,
    JobLayout,
    TaskName,
    parse_done_name,
    valid_job_id,
)
from prsd.spool.resultfiles import read_result_meta
from prsd.wire.fields import RecordError
from prsd.wire.records import SUCCEEDED

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@dataclass(frozen=True)
class KeptResult:
    """One kept result as written in ``retry_kept.jsonl`` (one JSON object a line)."""

    job: str
    result: str  # the result file, relative to the job's folder
    offset: int
    length: int
    header: str
    first: str
    count: int
    digest: str
    since_ns: int
    paths: tuple[str, ...] = ()

    def to_line(self) -> str:
        obj: dict[str, Any] = {
            "job": self.job, "res": self.result, "off": self.offset, "len": self.length,
            "hdr": self.header, "first": self.first, "n": self.count, "dig": self.digest,
            "t": self.since_ns,
        }  # fmt: skip
        if self.paths:
            obj["paths"] = list(self.paths)
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False) + "\n"

    @classmethod
    def from_line(cls, line: str) -> KeptResult:
        """Read back one line :meth:`to_line` wrote.

        Raises:
            ValueError: not a JSON object; KeyError, TypeError: not a kept result.
        """
        return cls.from_obj(decode_object(line))

    @classmethod
    def from_obj(cls, obj: dict[str, Any]) -> KeptResult:
        return cls(
            str(obj["job"]), str(obj["res"]), int(obj["off"]), int(obj["len"]),
            str(obj.get("hdr", "")), str(obj["first"]), int(obj["n"]), str(obj["dig"]),
            int(obj["t"]), tuple(str(p) for p in obj.get("paths", ())),
        )  # fmt: skip

    def kept(self, ref: int) -> Kept:
        return Kept(ref, self.first, self.count, self.digest, self.since_ns, self.paths)

    def result_path(self, jobs_root: Path) -> Path:
        """Where the bytes are: a result file the daemons wrote in that job's results.

        The leader opens it by the job owner's side, so the kernel refuses a file
        the owner may not read; the owner of ``self.job`` is checked by
        :func:`check_same_owner` before.

        Raises:
            PrsdError: the entry names anything else (a path out of the job's
                ``results/``, a name with ``..``): a retry never copies bytes it
                cannot vouch for into an output.
        """
        path = jobs_root / self.job / self.result
        parts = self.result.split("/")
        if (
            not valid_job_id(self.job)
            or len(parts) != 3
            or parts[0] != "results"
            or any(p in ("", ".", "..") for p in parts)
        ):
            raise PrsdError(f"kept result {self.result!r} of job {self.job!r} is not a result file")
        return path


def intake_ns(layout: JobLayout) -> int:
    """When the job took its input in: ``spec.json``'s time (written at intake)."""
    try:
        return os.stat(layout.spec).st_mtime_ns
    except OSError:
        return 0  # unknown: every file counts as edited since, so nothing is kept


def is_probe(task: TaskName) -> bool:
    """A bisection probe's task (never one of the job's own attempts)."""
    return task.attempt >= PROBE_ATTEMPT_BASE


def own_results(layout: JobLayout, mode: str, *, keep_short: bool) -> Iterator[KeptResult]:
    """The job's own succeeded attempts (and succeeded probes, for file lists).

    A result with fewer elements than inputs is kept only when ``keep_short`` (the
    job's gap does not count as a failure: summary_only without an item threshold);
    otherwise its mini-batch runs again whole.
    """
    since = intake_ns(layout)
    seen: set[tuple[int, str]] = set()
    for task, node in _done_tasks(layout):
        probe = is_probe(task)
        if probe and mode != "files":
            continue
        result = layout.result(task, node)
        meta = read_result_meta(result)
        wins = [
            o
            for o in (meta.outcomes if meta else ())
            if o.status == SUCCEEDED and (keep_short or o.succeeded_items >= o.items)
        ]
        if not wins:
            continue
        try:
            body = JobFolder.of(layout).read_task(layout.done_task(task, node))
        except (OSError, PrsdError, RecordError):
            continue
        planned = {mb.index: mb for mb in body.mini_batches}
        rel = str(result.relative_to(layout.root))
        for o in wins:
            mb = planned.get(o.index)
            if mb is None:
                continue
            # a mini-batch once; a probe once per group (duplicate commits are equal)
            key = (o.index, json.dumps(mb.payload) if probe else "")
            if key in seen:
                continue
            seen.add(key)
            yield _kept(layout.job_id, rel, o.offset, o.length, o.header, mb, mode, since)


def _kept(
    job: str, rel: str, offset: int, length: int, header: str, mb: Any, mode: str, since: int
) -> KeptResult:
    if mode == "files":
        items = [str(p) for p in mb.payload]
        return KeptResult(job, rel, offset, length, header, items[0], len(items),
                          items_digest(items), since)  # fmt: skip
    ident = payload_identity(mb.payload, mb.key)
    paths: tuple[str, ...] = ()
    if isinstance(mb.payload, list):
        paths = tuple(str(p) for p in mb.payload)
    elif isinstance(mb.payload, dict) and mb.key is None and "path" in mb.payload:
        paths = (str(mb.payload["path"]),)
    return KeptResult(job, rel, offset, length, header, ident, 1, ident, since, paths)


def _done_tasks(layout: JobLayout) -> Iterator[tuple[TaskName, str]]:
    folder = JobFolder.of(layout)
    for shard in folder.done_shards():
        for name in folder.done_names(shard):
            parsed = parse_done_name(name)
            if parsed is not None:
                yield parsed


def read_kept(job_root: Path) -> list[KeptResult]:
    """The results a retry job was given to keep (empty for an ordinary job).

    Raises:
        PrsdError: the file exists but is not the daemons' regular file, or a line is
            not a kept result.
    """
    data = read_trusted(JobLayout(job_root, job_root.name).retry_kept)
    if data is None:
        return []
    try:
        text = data.decode("utf-8")
        return [KeptResult.from_line(ln) for ln in text.splitlines() if ln]
    except (ValueError, KeyError, TypeError) as exc:
        raise PrsdError(
            f"{JobLayout(job_root, job_root.name).retry_kept} is not a list of kept results: {exc}"
        ) from exc


def results_to_keep(layout: JobLayout, mode: str, *, keep_short: bool) -> list[KeptResult]:
    """Everything a retry of this job may keep: its own results, then those it kept."""
    return [*own_results(layout, mode, keep_short=keep_short), *read_kept(layout.root)]


def job_owner(layout: JobLayout) -> JobOwner:
    """The recorded owner (:func:`prsd.spool.jobowner.owner`); no record: refused.

    Raises:
        PrsdError: the job has no owner record the daemons wrote.
    """
    try:
        return owner(layout)
    except OwnerRecordError as exc:
        raise PrsdError(f"job {layout.job_id}: {exc.one_line()}; a retry needs its owner") from exc


def check_same_owner(layout: JobLayout, others: set[str]) -> None:
    """Refuse results of another owner's job.

    Raises:
        PrsdError: one of ``others`` is missing or belongs to someone else.
    """
    mine = job_owner(layout)
    for job_id in sorted(others):
        if not valid_job_id(job_id):
            raise PrsdError(f"the retry names {job_id!r}, which is not a job id")
        other = layout.spool.job(job_id)
        if not os.path.lexists(other.root):
            raise PrsdError(f"the retry needs job {job_id}, which is gone")
        theirs = job_owner(other)
        if theirs.uid != mine.uid:
            raise PrsdError(
                f"job {job_id} belongs to {theirs.user}, not to {mine.user}: a retry may "
                "only keep results of its owner's jobs"
            )
