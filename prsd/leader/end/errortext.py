"""The text of ``logs/job_error.txt`` and ``logs/user/error.txt``: why the job ended.

Pure. The file is the first one Azure's troubleshooting guide sends a user to, so it
is true for every way a job ends:

- a job with no error at all says ``No errors.``, and only such a job;
- a job that failed, was canceled or completed with failures leads with the cause
  (the job's reason, one line), then the first error and the file holding its full
  text, then every distinct error grouped and counted (``run()`` errors from the
  error book, ``init()`` failures and environment builds from the nodes' reports);
- a job-wide cause with no error file of its own (a timeout of the whole job, an
  input error found while splitting, a cancellation, a fault of the leader) names
  the log that holds the rest.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from prsd.logline import one_line
from prsd.spool.states import JobState

if TYPE_CHECKING:
    from collections.abc import Iterable

    from prsd.leader.run.errorbook import ErrorBook, ErrorGroup
    from prsd.leader.run.initrule import NodeInit

NO_ERRORS = "No errors."


@dataclass(frozen=True)
class InitGroup:
    """One node's ``init()`` failures (or its failed environment build), counted."""

    node_id: str
    count: int
    kind: str  # init | init timeout | environment
    error: str
    process_name: str
    error_file: str
    traceback_tail: str

    def line(self) -> str:
        see = f"; see {self.error_file}" if self.error_file else ""
        return (
            f"{self.count} x [{self.kind}] {self.error} "
            f"(first: {self.process_name or 'no worker'} on node {self.node_id}{see})"
        )


def init_groups(reports: Iterable[NodeInit]) -> list[InitGroup]:
    """The nodes' reported init failures and environment builds, one group per node."""
    out: list[InitGroup] = []
    for r in reports:
        e = r.first_error
        if e is None or not (r.failures or r.timeouts or e.environment):
            continue
        if e.environment:
            kind, count = "environment", 1
        else:
            kind = "init timeout" if r.timeouts >= max(r.failures, 1) else "init"
            count = max(r.failures, r.timeouts, 1)
        out.append(
            InitGroup(
                r.node_id,
                count,
                kind,
                e.error or "unknown error",
                e.process_name,
                e.where,
                e.traceback_tail,
            )
        )
    return out


def job_error_text(
    state: str,
    reason: str,
    book: ErrorBook,
    *,
    inits: Iterable[InitGroup] = (),
    poison_items: Iterable[object] = (),
    job_log: str = "",
    fault_file: str = "",
) -> str:
    """The content of job_error.txt: the cause, the first error, the errors counted.

    Args:
        state: how the job ended (Completed, Completed with failures, Failed, Canceled).
        reason: the job's one-line reason (job_result.txt's ``Reason:``).
        book: the job's ``run()`` errors.
        inits: the nodes' ``init()`` failures and environment builds.
        poison_items: inputs bisection isolated; listed after the errors.
        job_log: the leader's log of the job, named where the cause has no file.
        fault_file: the leader's traceback of a fault that ended the job; when given,
            it is the cause's full text (errors of the job are still counted).
    """
    groups = list(inits)
    ranked = book.ranked()
    lines: list[str] = []
    if state != JobState.COMPLETED and reason:
        lines.append(reason)
        if fault_file:
            lines.append(f"Full text: {fault_file}")
        else:
            lines.extend(_first_error(book, groups, job_log))
    counted = [g.line() for g in groups] + [_book_line(g) for g in ranked]
    if counted:
        if lines:
            lines.append("")
        total = sum(g.count for g in groups) + sum(g.count for g in ranked)
        lines.append(f"Errors ({len(counted)} distinct, {total} in all), most frequent first:")
        lines.extend(counted)
    if not lines:
        lines.append(NO_ERRORS)
    poison = [str(p) for p in poison_items]
    if poison:
        lines.append("")
        lines.append(f"Poison items ({len(poison)}), isolated by bisection:")
        lines.extend(f"  {p}" for p in poison)
    return "".join(one_line(line) + "\n" for line in lines)


def _book_line(g: ErrorGroup) -> str:
    where = g.first.where()
    log = f"; see {g.first.error_file}" if g.first.error_file else ""
    return f"{g.count} x {g.message} (first: {where}{log})"


def _first_error(book: ErrorBook, groups: list[InitGroup], job_log: str) -> list[str]:
    """The first error's lines: what, where, the traceback's tail, the full text's file."""
    p = book.first
    if p is not None:
        head, tail, file = f"{p.where()}: {p.error}", p.traceback_tail, p.error_file
    elif groups:
        g = groups[0]
        who = f"node {g.node_id}, {g.process_name or 'no worker'}"
        what = {"init": "init failed", "init timeout": "init timed out"}.get(g.kind)
        if what is None:
            head = f"building the job's environment on node {g.node_id}: {g.error}"
        else:
            head = f"{what} ({who}): {g.error}"
        tail, file = g.traceback_tail, g.error_file
    else:
        return [f"Full text: {job_log}"] if job_log else []
    out = [f"First error: {head}"]
    out.extend("  " + line for line in tail.rstrip().splitlines())
    if file:
        out.append(f"Full text: {file}")
    elif job_log:
        out.append(f"Full text: {job_log}")
    return out


_FRAME = re.compile(r'^File "(?P<file>.+)", line (?P<line>\d+), in (?P<func>.+)$')
_FULL = "Full traceback: "
_OWN = str(Path(__file__).resolve().parent.parent) + os.sep  # prsd's own files
# ... as a worker on another node names them (its own install of prsd)
_WORKER_SIDE = re.compile(r"/prsd/(worker|wire)/\w+\.py$")
_SCRIPT_ERROR = "prsd.worker.script.EntryScriptError: "


def _users(file: str) -> bool:
    """A frame of the user's code: not prsd's own (the worker host, the command runner)
    and not the import machinery's (``<frozen importlib._bootstrap>``)."""
    if file.startswith(_OWN) or _WORKER_SIDE.search(file):
        return False
    return not file.startswith("<frozen ")


def compact_error(text: str) -> str:
    """A first error with its traceback as one readable line for ``job_result.txt``:
    the error, where it was raised (the innermost frame of the user's code), and the
    file with the full text.

    ``mini-batch 3 ...: KeyError: 'x'`` + traceback + ``Full traceback: F`` becomes
    ``mini-batch 3 ...: KeyError: 'x' (at /code/s.py:2 in run: raise KeyError('x')). Full
    traceback: F``. A traceback with no frame of the user's code (an error prsd raised
    itself) names no place; a traceback's tail alone (an init() failure) is named by
    its exception line. Text without a traceback is kept as it is (still made one line
    by the caller), its ``Full traceback:`` line joined on.
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    full = next((line for line in lines if line.startswith(_FULL)), "")
    body = [line for line in lines if line != full]
    if not body:
        return full
    frames = [(i, m) for i, line in enumerate(body) if (m := _FRAME.match(line))]
    led = body[0].startswith("First error:")  # else a traceback's tail (init_detail)
    traced = frames or any(line.startswith("Traceback (most recent") for line in body)
    if not traced and (led or len(body) == 1):
        return f"{' '.join(body)}. {full}" if full else text
    # A tail alone is named by its exception line, which ends the traceback.
    head = (body[0] if led else body[-1]).replace(_SCRIPT_ERROR, "")
    mine = [(i, f) for i, f in frames if _users(f["file"])]
    if mine:
        i, f = mine[-1]
        nxt = body[i + 1] if i + 1 < len(body) - 1 else ""  # the frame's source line
        code = "" if _FRAME.match(nxt) or set(nxt) <= set("^~ ") else nxt
        where = f"{f['file']}:{f['line']} in {f['func']}" + (f": {code}" if code else "")
        head = f"{head} (at {where})"
    return f"{head}. {full}" if full else head
