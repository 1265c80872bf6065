"""The job summary ``state/status.json``: leader -> ``prsctl status``, field by field.

:data:`STATUS_SCHEMA` is the contract (schema version 1, documented field by field in
docs/prsctl.md): adding a field is compatible; removing or retyping one raises
:data:`SCHEMA_VERSION`. :func:`validate_status` checks a document against it, and
:func:`reconcile` is the document a reader shows once ``final.json`` exists. A job
refused at intake has only the four fields marked required. As a typed record the
document is :class:`prsd.spool.statusrecord.JobStatus`, which refuses what
:func:`validate_status` finds with :class:`prsd.spool.badrecord.BadRecord`. Pure.
"""

from __future__ import annotations

from typing import Any

SCHEMA_VERSION = 1

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
    "nodes": (
        (list,),
        False,
        (
            "nodes serving the job: {node_id, workers, init_failures, gave_up, environment?}; "
            "environment: the node's build, {state, since, phase?, error?}"
        ),
    ),
    "text_private": (
        (bool,),
        False,
        (
            "the job's error text (reason, first_error, errors, last_errors) is in "
            "state/status.private.json, for the owner and the job's group only; "
            "false in what prsctl shows once it merged that record"
        ),
    ),
    "notes": ((list,), False, "what the job does differently from Azure: {group, text}"),
}


PRIVATE_STATUS = "status.private.json"
PRIVATE_KEYS: dict[str, Any] = {"reason": "", "first_error": "", "errors": [], "last_errors": []}
"""The fields that carry the job's own text, with what the public record holds instead."""


def split_private(doc: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the public record, the private one): the job's text moved out of the first (pure)."""
    public = {k: v for k, v in doc.items() if k not in PRIVATE_KEYS}
    for key, blank in PRIVATE_KEYS.items():
        if key in doc:
            public[key] = type(blank)()
    public["text_private"] = True
    private = {k: doc[k] for k in PRIVATE_KEYS if k in doc}
    private["job_id"] = doc.get("job_id", "")
    private["seq"] = doc.get("seq", 0)
    return public, private


def with_private(public: dict[str, Any], private: Any) -> dict[str, Any]:
    """The whole record again: ``private`` (if it is this job's) merged over ``public`` (pure)."""
    if not isinstance(private, dict) or private.get("job_id") != public.get("job_id"):
        return public
    merged = dict(public)
    for key in PRIVATE_KEYS:
        if key in private:
            merged[key] = private[key]
    merged["text_private"] = False
    return merged


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


def reconcile(doc: dict[str, Any], final: dict[str, Any] | None) -> dict[str, Any]:
    """The status a reader shows: once ``final.json`` exists, it wins.

    A leader frozen while it wrote a status (deposed meanwhile) can land a "Running"
    document after its successor ended the job; such a document is stale whatever
    its epoch, so the end state, reason and output, and the counts ``final.json``
    keeps (``counts``; none in one of an older version), are taken from it.
    ``stale_status_ignored`` says that the document on disk disagreed.
    """
    if final is None:
        return doc
    counts = final.get("counts")
    counts = counts if isinstance(counts, dict) else {}
    fixed = dict(doc)
    for key in ("state", "reason"):
        if isinstance(final.get(key), str):
            fixed[key] = final[key]
    if isinstance(final.get("output"), str) and final["output"]:
        fixed["output"] = final["output"]
    fixed.update({k: v for k, v in counts.items() if k in STATUS_SCHEMA})
    fixed["eta_s"] = None
    if any(doc.get(k) != fixed.get(k) for k in ("state", "total_mbs", "succeeded_mbs")):
        fixed["stale_status_ignored"] = True
    return fixed
