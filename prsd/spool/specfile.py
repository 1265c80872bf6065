"""``jobs/<id>/spec.json``: the job's loaded spec, read back as bytes for prsd/jobspec.

Promise: :func:`read_spec` is every reader's one way to read ``spec.json`` (the leader
resuming or retrying a job, an agent taking it on, ``prsctl retry``): one ``open``
that does not follow a link at the file's name, of a regular file no larger than
:data:`MAX_SPEC_BYTES` (prsd/spool/readsafe.py). A daemon that believes the spec asks
for ``daemon_owned``: a file written by anyone but the daemons is refused. The bytes
are decoded by :meth:`prsd.jobspec.JobSpec.from_json` on the caller's side (this
package does not import prsd/jobspec). The file is written once, at intake
(prsd/leader/intake/intake.py).

Errors: :class:`prsd.spool.readsafe.MissingFile` when there is no ``spec.json`` (not
written yet, or a job refused at intake); :class:`prsd.spool.readsafe.UntrustedFile`
for a link, a file that is not regular, too large, or (when asked) not the daemons';
``OSError`` when reading the opened file fails.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prsd.spool.readsafe import read_small

if TYPE_CHECKING:
    from prsd.spool.layout import JobLayout

__all__ = ["MAX_SPEC_BYTES", "read_spec"]

MAX_SPEC_BYTES = 64 * 1024 * 1024


def read_spec(layout: JobLayout, *, daemon_owned: bool) -> bytes:
    """The bytes of the job's ``spec.json``.

    Raises:
        MissingFile: the job has no ``spec.json``.
        UntrustedFile: a link, not a regular file, larger than :data:`MAX_SPEC_BYTES`,
            or, with ``daemon_owned``, written by someone other than the daemons.
        OSError: the opened file cannot be read.
    """
    return read_small(layout.spec, MAX_SPEC_BYTES, daemon_owned=daemon_owned)
