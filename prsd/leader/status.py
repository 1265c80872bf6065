"""The job summary ``state/status.json`` that ``prsctl status`` reads.

It is small, replaced atomically, and costs the same for ten mini-batches or ten
million, so a status query never scans the spool. :data:`STATUS_SCHEMA` is the
contract (schema version 1, documented field by field in docs/prsctl.md);
:func:`validate_status` checks a document against it. A job refused at intake has
only the four fields marked required.
"""

from __future__ import annotations

import json
import os
import signal
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from prsd.jobspec.said import spec_notes
from prsd.storage.atomic import write_atomic

if TYPE_CHECKING:
    from prsd.jobspec import JobSpec
    from prsd.leader.job import JobDriver
    from prsd.storage.layout import JobLayout

SCHEMA_VERSION = 1
STATUS_INTERVAL_S = 0.5
# Tests only: when the file this names exists, the leader removes it and stops itself
# (SIGSTOP) just before it publishes a status, to land a stale status late.
PAUSE_HOOK_ENV = "PRSD_TEST_PAUSE_BEFORE_STATUS"

_INT = (int,)
_NUM = (int, float)
_STR = (str,)
_OPT_INT = (int, type(None))
_OPT_NUM = (int, float, type(None))

# field -> (accepted JSON types, required, meaning). Adding a field is compatible;
# removing or retyping one raises SCHEMA_VERSION.
STATUS_SCHEMA: dict[str, tuple[tuple[type, ...], bool, str]] = {
    "schema": (_INT, True, "schema version of this document (1)"),
    "job_id": (_STR, True, "the job's id"),
    "state": (
        _STR,
        True,
        "Running, Completed, Completed with failures, Failed or Canceled (prsctl: Queued, Starting)",
    ),
    "reason": (_STR, True, "why the job ended (empty while running or when completed)"),
    "name": (_STR, False, "the job's name"),
    "epoch": (_INT, False, "the epoch of the leader that wrote this document"),
    "seq": (_INT, False, "this leader's write number for the job (grows by one per write)"),
    "started_at": (_STR, False, "when the leader took the job in (ISO 8601 UTC)"),
    "updated_at": (_STR, False, "when this document was written (ISO 8601 UTC)"),
    "elapsed_s": (_NUM, False, "seconds since the job was taken in"),
    "split_done": ((bool,), False, "every mini-batch has been planned"),
    "planned_mbs": (_INT, False, "mini-batches planned so far"),
    "total_mbs": (_OPT_INT, False, "all mini-batches of the job; null while splitting"),
    "succeeded_mbs": (_INT, False, "mini-batches finished successfully"),
    "failed_mbs": (_INT, False, "mini-batches failed after their last retry"),
    "partial_mbs": (_INT, False, "succeeded mini-batches that returned fewer elements"),
    "items": (_INT, False, "items of finished mini-batches"),
    "succeeded_items": (_INT, False, "items returned by run()"),
    "failed_items": (_INT, False, "items not returned"),
    "attempts": (_INT, False, "attempts recorded (first runs, retries, requeues)"),
    "requeues": (_INT, False, "attempts returned unrun (node lost, work handed back)"),
    "outstanding_tasks": (_INT, False, "task files written and not yet settled"),
    "rate_mbs_per_s": (_NUM, False, "finished mini-batches per second since the start"),
    "eta_s": (_OPT_NUM, False, "estimated seconds to the end; null when unknown"),
    "output": (_STR, False, "the append_row file (published when Completed)"),
    "first_error": (_STR, False, "the root cause: first failure, traceback tail, log file"),
    "errors": ((list,), False, "distinct errors: {message, count, first}, most frequent first"),
    "last_errors": ((list,), False, "latest failures: {mini_batch, node_id, process_name, error}"),
    "stale_status_ignored": (
        (bool,),
        False,
        "prsctl only: the document was older than the job's end; state taken from final.json",
    ),
    "nodes": ((list,), False, "nodes serving the job: {node_id, workers, init_failures, gave_up}"),
    "notes": ((list,), False, "what the job does differently from Azure: {group, text}"),
}


def validate_status(doc: Any) -> list[str]:
    """Problems of a status document against :data:`STATUS_SCHEMA` (empty: valid)."""
    if not isinstance(doc, dict):
        return ["the document is not a JSON object"]
    problems = []
    for key, (types, required, _) in STATUS_SCHEMA.items():
        if key not in doc:
            if required:
                problems.append(f"{key}: missing")
            continue
        value = doc[key]
        if isinstance(value, bool) and bool not in types:
            problems.append(f"{key}: a boolean where {_names(types)} is expected")
        elif not isinstance(value, types):
            problems.append(f"{key}: {type(value).__name__} where {_names(types)} is expected")
    if doc.get("schema") != SCHEMA_VERSION:
        problems.append(f"schema: {doc.get('schema')!r}, expected {SCHEMA_VERSION}")
    return problems


def _names(types: tuple[type, ...]) -> str:
    return " or ".join("null" if t is type(None) else t.__name__ for t in types)


class StatusWriter:
    """Rewrites status.json at most every STATUS_INTERVAL_S seconds."""

    def __init__(self, layout: JobLayout, spec: JobSpec, epoch: int = 0) -> None:
        self.layout = layout
        self.spec = spec
        self.epoch = epoch
        self.seq = 0
        self.started_wall = datetime.now(UTC)
        self.notes = [n.to_json() for n in spec_notes(spec)]
        self._last = -1e9

    def maybe_write(self, driver: JobDriver, now: float) -> None:
        if now - self._last >= STATUS_INTERVAL_S:
            self.write(driver, now)

    def write(self, driver: JobDriver, now: float) -> None:
        self._last = now
        self.seq += 1
        data = json.dumps(summary(driver, self, now), indent=1).encode()
        if driver.final is None:
            _pause_hook()
        write_atomic(self.layout.status, data, durable=False)


def _pause_hook() -> None:
    hook = os.environ.get(PAUSE_HOOK_ENV)
    if hook:
        try:
            os.unlink(hook)
        except FileNotFoundError:
            return
        os.kill(os.getpid(), signal.SIGSTOP)


def reconcile(doc: dict[str, Any], final: dict[str, Any] | None) -> dict[str, Any]:
    """The status a reader shows: once ``final.json`` exists, its state wins.

    A leader frozen while it wrote a status (deposed meanwhile) can land a "Running"
    document after its successor ended the job; such a document is stale whatever
    its epoch, so the end state, reason and output are taken from ``final.json``.
    """
    if final is None or doc.get("state") == final.get("state"):
        return doc
    fixed = dict(doc)
    for key in ("state", "reason"):
        if isinstance(final.get(key), str):
            fixed[key] = final[key]
    if isinstance(final.get("output"), str) and final["output"]:
        fixed["output"] = final["output"]
    fixed["eta_s"] = None
    fixed["stale_status_ignored"] = True
    return fixed


def summary(driver: JobDriver, writer: StatusWriter, now: float) -> dict[str, Any]:
    """The status document (schema 1)."""
    c = driver.ledger.counts()
    elapsed = now - driver.started
    done = c.finished_mbs
    rate = done / elapsed if elapsed > 0 else 0.0
    eta = None
    if c.total_mbs is not None and rate > 0:
        eta = (c.total_mbs - done) / rate
    final = driver.final
    first = driver.errors.first
    return {
        "schema": SCHEMA_VERSION,
        "job_id": driver.job_id,
        "name": driver.spec.name,
        "epoch": writer.epoch,
        "seq": writer.seq,
        "state": final.state if final else "Running",
        "reason": final.reason if final else "",
        "started_at": writer.started_wall.isoformat(timespec="seconds"),
        "updated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "elapsed_s": round(elapsed, 3),
        "split_done": driver.split_done,
        "planned_mbs": len(driver.ledger),
        "total_mbs": c.total_mbs,
        "succeeded_mbs": c.succeeded_mbs,
        "failed_mbs": c.failed_mbs,
        "partial_mbs": c.partial_mbs,
        "items": c.items,
        "succeeded_items": c.succeeded_items,
        "failed_items": c.failed_items,
        "attempts": driver.ledger.attempts,
        "requeues": driver.ledger.requeues,
        "outstanding_tasks": len(driver.table),
        "rate_mbs_per_s": round(rate, 3),
        "eta_s": round(eta, 1) if eta is not None else None,
        "output": final.output if final else (driver.spec.append_row_to or ""),
        "first_error": driver.errors.root_cause() if first else "",
        "errors": [
            {"message": g.message, "count": g.count, "first": g.first.where()}
            for g in driver.errors.ranked()[:10]
        ],
        "last_errors": [p.brief() for p in driver.errors.recent],
        "nodes": [
            {
                "node_id": n.node_id,
                "workers": n.workers,
                "init_failures": n.failures,
                "gave_up": n.gave_up,
            }
            for n in driver.node_inits
        ],
        "notes": writer.notes,
    }
