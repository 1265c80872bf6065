"""``jobs/<id>/state/status.json`` as one typed record: the job's id, state and reason,
and the rest of the documented fields.

Promise: :class:`JobStatus` is a status document that holds to the contract of
:mod:`prsd.spool.statusschema` (:data:`prsd.spool.statusschema.STATUS_SCHEMA`, documented field by
field in docs/prsctl.md): its three identifying fields are typed attributes, every
other field is kept in ``fields`` as written (a field a newer leader adds is kept,
not dropped). :meth:`JobStatus.of` checks a document the leader built,
:meth:`JobStatus.from_json` one read back; both refuse a document against the schema.
The split into a public and a private file is prsd/spool/privaterecords.py.

Errors: :meth:`JobStatus.of` and :meth:`JobStatus.from_json` raise
:class:`prsd.spool.badrecord.BadRecord` naming every problem found.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from prsd.spool.badrecord import BadRecord, Doc
from prsd.spool.statusschema import SCHEMA_VERSION, validate_status

__all__ = ["JobStatus"]

NAME = "state/status.json"
_OWN = ("schema", "job_id", "state", "reason")


@dataclass(frozen=True)
class JobStatus:
    """One status document (see the module docstring)."""

    job_id: str
    state: str  # a JobState's text while the leader writes it (prsctl adds Queued, Starting)
    reason: str = ""
    fields: dict[str, Any] = field(default_factory=dict)  # the other documented fields

    @classmethod
    def of(cls, doc: dict[str, Any]) -> JobStatus:
        """The record of a status document.

        Raises:
            BadRecord: ``doc`` does not hold to the schema.
        """
        problems = validate_status(doc)
        if problems:
            raise BadRecord(f"{NAME}: {'; '.join(problems)}")
        rest = {k: v for k, v in doc.items() if k not in _OWN}
        return cls(doc["job_id"], doc["state"], doc["reason"], rest)

    def to_doc(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION,
            "job_id": self.job_id,
            "state": str(self.state),
            "reason": self.reason,
            **self.fields,
        }

    def to_json(self) -> bytes:
        return json.dumps(self.to_doc(), indent=1).encode()

    @classmethod
    def from_json(cls, data: bytes) -> JobStatus:
        """Read a status document.

        Raises:
            BadRecord: not one of this schema.
        """
        return cls.of(Doc(data, NAME, SCHEMA_VERSION).document)
