"""A node's report on one job (``jobs/<id>/nodes/<node>.json``): agent -> leader, prsctl.

Promise: the agent replaces its report when its workers' init counters or its
environment change, or when it cannot see the job's files (then the report says only
that); the leader applies the job-wide init rules to all of them (docs/supervision.md)
and ``prsctl status`` shows environments being built. Its ``first_init_error`` is an
:class:`prsd.spool.initrecords.InitError`, its ``environment`` an
:class:`prsd.spool.envrecord.EnvBuild`, typed on both sides; one of them that cannot
be read is read as a record that says so, so the init rule still sees the node.
:func:`environment_line` is the one wording of a node's build for every view
(``prsd run``, ``prsctl status``, the SDKs' streams): ``building environment:
resolving (0:00:12)``.

Errors: :meth:`NodeReport.decode` raises :class:`prsd.spool.badrecord.BadRecord` for
bytes that are not a report (a reader skips a torn or foreign report and reads it
again at its next look).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from prsd.spool.atomic import write_atomic
from prsd.spool.badrecord import BadRecord, Doc
from prsd.spool.durations import format_duration
from prsd.spool.envrecord import EnvBuild
from prsd.spool.initrecords import InitError

if TYPE_CHECKING:
    from pathlib import Path

NAME = "node report"


@dataclass(frozen=True)
class NodeReport:
    """One node's part in a job: its workers by state, init counters, environment."""

    node_id: str
    updated_at: str = ""  # ISO 8601 UTC, for people
    workers: int | None = None  # the workers the node aims for (None: not said)
    starting: int = 0
    idle: int = 0
    busy: int = 0
    stopping: int = 0
    init_successes: int = 0
    init_failures: int = 0
    init_failures_in_row: int = 0
    init_timeouts: int = 0
    gave_up: bool = False  # the node stopped starting workers (its init rule)
    first_init_error: InitError | None = None
    environment: EnvBuild | None = None  # the job's environment on this node
    cannot_see: list[str] = field(default_factory=list)  # job paths the node cannot see

    def encode(self) -> bytes:
        obj: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, InitError | EnvBuild):
                obj[f.name] = value.to_obj()
            elif value is not None and value != []:
                obj[f.name] = value
        return json.dumps(obj, indent=1).encode()

    @classmethod
    def decode(cls, data: bytes) -> NodeReport:
        """Read a report (BadRecord: not one)."""
        doc = Doc(data, NAME, 1)
        ints = ("starting", "idle", "busy", "stopping", "init_successes", "init_failures")
        counts = {k: doc.integer(k, default=0) for k in (*ints, "init_failures_in_row")}
        return cls(
            node_id=doc.text("node_id"),
            updated_at=doc.text("updated_at", default=""),
            workers=doc.get("workers", int, type(None), default=None),
            init_timeouts=doc.integer("init_timeouts", default=0),
            gave_up=doc.flag("gave_up", default=False),
            first_init_error=_init_error(
                doc.get("first_init_error", dict, type(None), default=None)
            ),
            environment=_env_build(doc.get("environment", dict, type(None), default=None)),
            cannot_see=[str(p) for p in doc.get("cannot_see", list, default=[])],
            **counts,
        )


def _init_error(value: dict[str, Any] | None) -> InitError | None:
    """The report's first init error; one that cannot be read is reported as such."""
    if value is None:
        return None
    try:
        return InitError.decode(value)
    except BadRecord as exc:
        return InitError("", f"the node's init error cannot be read: {exc}")


def _env_build(value: dict[str, Any] | None) -> EnvBuild | None:
    """The report's environment build; one that cannot be read is shown as such."""
    if value is None:
        return None
    try:
        return EnvBuild.decode(value)
    except BadRecord as exc:
        return EnvBuild("failed", error=f"the node's environment report cannot be read: {exc}")


def environment_line(environment: EnvBuild | None, now: datetime) -> str:
    """``building environment: PHASE (h:mm:ss)`` (the time since the build began, or the
    wait for another's), ``environment failed: ERROR``, or "" (none, or ready)."""
    if environment is None:
        return ""
    if environment.state == "failed":
        return f"environment failed: {environment.error}"
    if environment.state != "building":
        return ""
    phase = environment.phase
    shown = _since(environment.since, now)
    return f"building environment{': ' + phase if phase else ''} ({shown})"


def _since(when: str, now: datetime) -> str:
    try:
        then = datetime.fromisoformat(when)
    except ValueError:
        return "?"
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    return format_duration((now - then).total_seconds())


def write_report(path: Path, data: bytes) -> None:
    """Replace a node's report (``data``: :meth:`NodeReport.encode`), its folder
    (``nodes/``) made if missing; not made durable, since the agent writes it again on
    every change. Where the job's folder is gone (``prsctl gc`` removed the ended job
    as its workers retired) nothing is written and no folder of it made again."""
    try:
        path.parent.mkdir(exist_ok=True)
    except FileNotFoundError:
        return
    write_atomic(path, data, durable=False)
