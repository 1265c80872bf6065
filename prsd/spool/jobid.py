"""Job ids: minted once, by the leader's rules, and never given to two jobs.

Invariant: an id names at most one job over the spool's whole life. The leader
reserves every id it gives with an ``O_EXCL`` create in ``jobs/.ids/`` (a folder only
the daemons write) before it moves a folder into ``jobs/<id>/``, and it only ever
moves into a name it reserved itself. An inbox folder can therefore never name,
replace or re-open a job: ``prsctl submit`` proposes an id of
:func:`make_job_id`'s shape (so it can print it at once), and the leader keeps the
proposal only when it reserves it first and no ``jobs/<id>`` exists; any other name
(a hand-dropped folder, another job's id, a name used before) gets a fresh id.

A leader killed between reserving a proposal and moving the folder leaves a marker
that names the inbox folder it was for and no ``jobs/<id>``; the next leader takes
that reservation over, so the job keeps the id ``prsctl submit`` printed. A leader
killed between the marker's create and its write leaves it empty: an empty marker of
a proposal-shaped id with no ``jobs/<id>`` is taken over too (the dead leader moved
nothing; a fresh id of its minting equal to another folder's proposal would need two
4-hex suffixes of the same name and second to meet). Once the
folder has moved the marker is settled (it says ``given``): from then on no folder of
that name can take it over, even after the job is removed. The settled marker also
keeps the folder's owner as it was before sealing (for a leader that dies while
sealing, prsd/leader/intake/intake.py).

Errors: none of its own; a reservation that fails in an unclear way (an NFS reply
lost) reads the marker back, which names its creator (prsd.spool.atomic).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from prsd.spool.atomic import create_exclusive, write_atomic
from prsd.spool.layout import valid_job_id
from prsd.spool.readsafe import UntrustedFile, read_small

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.spool.layout import SpoolLayout

_UNSAFE = re.compile(r"[^a-z0-9_-]+")
_STAMP = re.compile(r"-\d{8}-\d{6}-[0-9a-f]{4}$")
MAX_NAME_CHARS = 60
REGISTRY = ".ids"
MAX_MINT_TRIES = 20
MAX_MARKER_BYTES = 4096
_FOR = "for-inbox="
GIVEN = b"given\n"


def sanitize_name(name: str) -> str:
    """Lower-case letters, digits, ``_`` and ``-`` only; never empty."""
    cleaned = _UNSAFE.sub("-", name.lower()).strip("-_")
    return cleaned[:MAX_NAME_CHARS].strip("-_") or "job"


def make_job_id(name: str, when: datetime | None = None) -> str:
    """``<sanitized-name>-<YYYYMMDD>-<HHMMSS>-<4 hex>``: unique, and sorted by start time per name."""
    when = when or datetime.now(UTC)
    return f"{sanitize_name(name)}-{when:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def is_proposal(name: str) -> bool:
    """True for an inbox name shaped like :func:`make_job_id`'s ids (pure)."""
    return valid_job_id(name) and bool(_STAMP.search(name))


def base_name(name: str) -> str:
    """The job name inside an id-shaped folder name (its time stamp and suffix dropped)."""
    return _STAMP.sub("", name) or name


def registry(spool: SpoolLayout) -> Path:
    """``jobs/.ids/``: one empty marker per id ever given."""
    return spool.jobs / REGISTRY


def ever_given(spool: SpoolLayout, job_id: str) -> bool:
    """True when ``job_id`` is (or was) a job of this spool."""
    return os.path.lexists(spool.jobs / job_id) or os.path.lexists(registry(spool) / job_id)


def reserve_job_id(spool: SpoolLayout, job_id: str, inbox_name: str = "") -> bytes | None:
    """Reserve ``job_id`` for the folder ``inbox/<inbox_name>`` about to move in.

    Returns the marker's bytes (what :func:`release_job_id` checks) when the id is
    ours, None when it was given before.

    Raises:
        OSError: the registry cannot be written (the spool is full or unwritable).
    """
    if os.path.lexists(spool.jobs / job_id):
        return None  # a job from before the registry existed
    folder = registry(spool)
    folder.mkdir(exist_ok=True)
    # surrogateescape: a name that is not UTF-8 is written as its own bytes, never raises
    token = f"{os.getpid()} {secrets.token_hex(8)} {_FOR}{inbox_name}\n".encode(
        errors="surrogateescape"
    )
    return token if create_exclusive(folder / job_id, token) else None


def take_over_reservation(spool: SpoolLayout, job_id: str) -> bytes | None:
    """A reservation of ``job_id`` for ``inbox/<job_id>`` whose folder never moved in.

    Returns the marker's bytes when the reservation is one a leader made for this very
    inbox name and left unsettled (it stopped between reserving and moving), None
    otherwise (the id was given, minted for another folder, or is from an older version).
    An empty marker (its creator killed before it wrote a byte) is taken over as well.
    """
    if os.path.lexists(spool.jobs / job_id):
        return None
    held = _marker(spool, job_id)
    mark = f" {_FOR}{job_id}\n".encode(errors="surrogateescape")
    return held if held is not None and (held == b"" or held.endswith(mark)) else None


def settle_job_id(spool: SpoolLayout, job_id: str, owner: tuple[int, int] | None = None) -> None:
    """Mark ``job_id`` given for good: its folder moved in (idempotent).

    ``owner`` (uid, gid) is the moved folder's, taken before it is sealed: a leader
    that dies while sealing leaves the folder the daemons' and its owner on record
    here (:func:`settled_owner`).

    Raises:
        OSError: the registry cannot be written.
    """
    if owner is None and settled_owner(spool, job_id) is not None:
        return  # settled with its owner already: keep it
    line = GIVEN if owner is None else b"given uid=%d gid=%d\n" % owner
    write_atomic(registry(spool) / job_id, line)


def settled_owner(spool: SpoolLayout, job_id: str) -> tuple[int, int] | None:
    """The (uid, gid) recorded when ``job_id``'s folder moved in; None if none was."""
    data = _marker(spool, job_id)
    if data is None:
        return None
    fields = dict(f.split("=", 1) for f in data.decode("ascii", "replace").split() if "=" in f)
    if not data.startswith(b"given ") or not {"uid", "gid"} <= fields.keys():
        return None
    try:
        return int(fields["uid"]), int(fields["gid"])
    except ValueError:
        return None


def release_job_id(spool: SpoolLayout, job_id: str, held: bytes) -> None:
    """Give back an id reserved for a move that did not happen, if the marker is still ours."""
    with contextlib.suppress(OSError):  # never raises: at worst the id stays reserved
        if _marker(spool, job_id) == held:
            (registry(spool) / job_id).unlink(missing_ok=True)


def _marker(spool: SpoolLayout, job_id: str) -> bytes | None:
    """The reservation marker of ``job_id`` if it is the daemons' own file; None otherwise."""
    try:
        return read_small(registry(spool) / job_id, MAX_MARKER_BYTES, daemon_owned=True)
    except UntrustedFile:
        return None


def assign_job_id(spool: SpoolLayout, inbox_name: str, name: str) -> tuple[str, bytes]:
    """The id for the folder ``inbox/<inbox_name>``, reserved: the proposal or a fresh one.

    Args:
        spool: the spool.
        inbox_name: the folder's name in ``inbox/``.
        name: the job name fresh ids are made from.

    Returns:
        The id and the reservation's marker bytes (for :func:`release_job_id`).

    Raises:
        OSError: the registry cannot be written.
    """
    if is_proposal(inbox_name):
        held = reserve_job_id(spool, inbox_name, inbox_name)
        if held is None:
            held = take_over_reservation(spool, inbox_name)
        if held is not None:
            return inbox_name, held
    for _ in range(MAX_MINT_TRIES):
        job_id = make_job_id(name)
        held = reserve_job_id(spool, job_id, inbox_name)
        if held is not None:
            return job_id, held
    raise OSError(f"no free job id for {name!r} after {MAX_MINT_TRIES} tries")
