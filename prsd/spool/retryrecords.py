"""A retry job's records: ``retry.json`` (the plan) and ``retry_order.json`` (the order).

Promise: :class:`RetryPlan` is what ``prsctl retry`` writes beside a retry's
``job.yaml`` (the earlier job, how results are matched, the code digests, the
overrides applied); :class:`RetryOrder` is what the leader writes once the retry's
split ends (the output's units in order, and what changed since the earlier job).
Each round-trips through ``encode`` / ``decode``, and ``decode`` refuses a record of
the wrong shape or of a newer version with :class:`prsd.spool.badrecord.BadRecord`
naming the field, instead of an error of whatever the bad value made Python raise.
Where the files lie and who may trust them is prsd/retryplan/retryfiles.py.
:func:`read_kept_text` is the raw text of a retry's ``retry_kept.jsonl`` (its lines
are decoded by prsd/retryplan/kept.py), for a quick look at which jobs it names.

Errors: ``decode`` raises :class:`prsd.spool.badrecord.BadRecord`;
:func:`read_kept_text` raises ``OSError`` (``FileNotFoundError``: no such file) and
``UnicodeDecodeError``.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from prsd.spool.badrecord import Doc, encode

if TYPE_CHECKING:
    from prsd.spool.layout import JobLayout

__all__ = ["NAMED", "SCHEMA", "RetryOrder", "RetryPlan", "named", "read_kept_text"]

SCHEMA = 1
NAMED = 10  # inputs named in a message before "and N more"
MODES = ("files", "payload", "groups")


@dataclass(frozen=True)
class RetryPlan:
    of_job: str  # the earlier job's id (same spool)
    mode: str  # files (matched input by input) | payload (tables) | groups (partitions)
    failed_items: tuple[str, ...] = ()  # the earlier job's failed inputs (to name removals)
    code: str = ""  # digest of this retry's code snapshot
    earlier_code: str = ""  # digest of the earlier job's code snapshot
    overrides: tuple[str, ...] = ()  # --set KEY=VALUE applied to the earlier job.yaml

    def encode(self) -> bytes:
        return encode(asdict(self), SCHEMA)

    @classmethod
    def decode(cls, data: bytes) -> RetryPlan:
        """Read ``retry.json``.

        Raises:
            BadRecord: not such a record.
        """
        doc = Doc(data, "retry.json", SCHEMA)
        mode = doc.text("mode")
        if mode not in MODES:
            raise doc.bad(f"mode {mode!r} is none of {', '.join(MODES)}")
        return cls(
            doc.text("of_job"),
            mode,
            doc.texts("failed_items", default=[]),
            doc.text("code", default=""),
            doc.text("earlier_code", default=""),
            doc.texts("overrides", default=[]),
        )


@dataclass
class RetryOrder:
    """``retry_order.json``: the output's units in order, and what the split found.

    Filled in while the split runs (not frozen); written once when it ends.
    """

    units: list[int] = field(default_factory=list)  # k: run mini-batch k; -1-r: kept r
    kept: int = 0
    voided: list[str] = field(default_factory=list)
    voided_count: int = 0
    gone_failed: list[str] = field(default_factory=list)
    gone_failed_count: int = 0

    def to_obj(self) -> dict[str, Any]:
        """The record as the JSON object :meth:`encode` writes."""
        return {"schema": SCHEMA, **asdict(self)}

    def encode(self) -> bytes:
        return json.dumps(self.to_obj(), separators=(",", ":")).encode()

    @classmethod
    def decode(cls, data: bytes) -> RetryOrder:
        """Read ``retry_order.json`` (a record without a field has its default).

        Raises:
            BadRecord: not such a record.
        """
        doc = Doc(data, "retry_order.json", SCHEMA)
        units = doc.get("units", list, default=[])
        if not all(isinstance(u, int) and not isinstance(u, bool) for u in units):
            raise doc.bad("units holds something that is not a whole number")
        return cls(
            list(units),
            doc.integer("kept", default=0),
            list(doc.texts("voided", default=[])),
            doc.integer("voided_count", default=0),
            list(doc.texts("gone_failed", default=[])),
            doc.integer("gone_failed_count", default=0),
        )

    def summary(self, of_job: str) -> str:
        """One line for the logs: kept results, voided ones, failed inputs gone."""
        runs = sum(1 for u in self.units if u >= 0)
        parts = [f"{self.kept} results of job {of_job} (and its earlier jobs) kept"]
        parts.append(f"{runs} mini-batches run again")
        if self.voided_count:
            parts.append(
                f"{self.voided_count} earlier results no longer match the input (an input "
                f"edited, removed or added among them) and ran again, from "
                f"{named(self.voided, self.voided_count)}"
            )
        if self.gone_failed_count:
            parts.append(
                f"{self.gone_failed_count} failed input files were removed: "
                f"{named(self.gone_failed, self.gone_failed_count)}"
            )
        return "; ".join(parts)


def named(names: list[str], count: int) -> str:
    shown = ", ".join(os.path.basename(n) or n for n in names[:NAMED])
    return shown + (f" and {count - NAMED} more" if count > NAMED else "")


def read_kept_text(layout: JobLayout) -> str:
    """The text of the job's ``retry_kept.jsonl``, undecoded.

    Raises:
        OSError: it cannot be read (``FileNotFoundError``: the job is no retry).
        UnicodeDecodeError: it is not UTF-8.
    """
    return layout.retry_kept.read_text(encoding="utf-8")
