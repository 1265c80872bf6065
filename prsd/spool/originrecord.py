"""``jobs/<id>/origin.json``: where a job came from, as its submitter wrote it.

Promise: :class:`Origin` is what the client records beside ``job.yaml`` at submit
(``prsctl submit``, ``prsd run``, a pipeline's steps, a retry): the job folder it was
submitted from (``job_dir``, an absolute path; "" when none), the name asked for
(``prsctl submit --name``; "" for none) and the digest of the code snapshot
(prsd/spool/codedigest.py). It round-trips through :meth:`Origin.to_json` /
:meth:`Origin.from_json`; a record written before it carried ``schema`` reads as
version 1. The file is the submitter's own: a reader believes the folder it names
only as far as the submitter's own rights go (prsd/jobspec/load.py), and reads it
without following a link (:func:`read_origin_record`).

Errors: :meth:`Origin.from_json` and :func:`read_origin_record` raise
:class:`prsd.spool.badrecord.BadRecord` for anything but such a record (a
``job_dir`` that is not absolute, a version newer than ``SCHEMA``, included);
:func:`read_origin_record` raises :class:`prsd.spool.readsafe.UntrustedFile` for a
missing file, a link or one over :data:`MAX_ORIGIN_BYTES`; :func:`write_origin`
(atomic, into a staging folder the client owns) raises ``OSError``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prsd.spool.atomic import write_atomic
from prsd.spool.badrecord import Doc, encode
from prsd.spool.readsafe import read_small

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.spool.layout import JobLayout

__all__ = ["MAX_ORIGIN_BYTES", "SCHEMA", "Origin", "read_origin_record", "write_origin"]

SCHEMA = 1
MAX_ORIGIN_BYTES = 64 * 1024


@dataclass(frozen=True)
class Origin:
    """Where a job was submitted from (see the module docstring)."""

    job_dir: str = ""
    name: str = ""
    code: str = ""

    def to_json(self) -> bytes:
        return encode({"job_dir": self.job_dir, "name": self.name, "code": self.code}, SCHEMA)

    @classmethod
    def from_json(cls, data: bytes) -> Origin:
        """Read ``origin.json``.

        Raises:
            BadRecord: not such a record.
        """
        doc = Doc(data, "origin.json", SCHEMA)
        job_dir = doc.text("job_dir", default="")
        if job_dir and not os.path.isabs(job_dir):
            raise doc.bad(f"job_dir {job_dir!r} is not an absolute path")
        return cls(job_dir, doc.text("name", default=""), doc.text("code", default=""))


def read_origin_record(path: Path) -> Origin:
    """The ``origin.json`` at ``path``, read without following a link and within
    :data:`MAX_ORIGIN_BYTES`.

    Raises:
        UntrustedFile: missing, a link, not a regular file, or too large.
        BadRecord: not such a record.
    """
    return Origin.from_json(read_small(path, MAX_ORIGIN_BYTES, daemon_owned=False))


def write_origin(layout: JobLayout, origin: Origin) -> None:
    """Write ``origin`` as the job's ``origin.json`` (atomically: a reader sees none or all).

    Raises:
        OSError: the folder is missing or not writable, or the disk is full.
    """
    write_atomic(layout.origin, origin.to_json())
