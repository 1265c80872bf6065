"""Inbox folders that will never be jobs: moved aside into ``jobs/.refused/``, once, with the reason.

Two kinds are refused: a folder whose name is not UTF-8 (no job id, log line or
status row could carry it; refused at first sight), and a folder that stays
incomplete (no ``job.yaml``) for longer than the grace period (``PRSD_INBOX_GRACE_S``,
default 600 s, counted from when a leader first saw it). Each is moved with one
rename, never followed and never read, to ``jobs/.refused/<n>/`` (a name the leader
makes), and the record ``jobs/.refused/<n>.json`` (world-readable, as the inbox's
names are) says what it was called (non-UTF-8 bytes written as ``\\xff``), whose it
was, when and why. The leader's log says it once (one line per round when
more than a few are refused at once). ``prsctl status`` reads the records
(prsd/cli/inboxview.py). A refused folder is removed after its retention
(prsd/leader/intake/refusedgc.py).

When a folder was first seen is kept in ``leader/inbox_seen.json`` (the daemons' own
file, mode 0600, wall-clock seconds, written when the set of waiting folders changes),
so a leader that restarts, or a standby that takes over, counts on from the first
sighting instead of starting the grace period again. The record is read back only as
a regular file of the daemons (a forged one is ignored); it is read again whenever
another leader has rewritten it.

Names starting with ``.`` are never touched: ``prsctl submit`` copies under them.

Errors: none raised. A folder that cannot be moved (it went away, the spool is
unwritable) is logged once and tried again at the next round; a record that cannot
be written is logged once and the grace period is counted in memory meanwhile.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from prsd.leader.intake.refusedgc import RefusedExpiry
from prsd.logconfig import get_logger
from prsd.spool.atomic import move_verified, write_atomic
from prsd.spool.inboxrecords import read_seen, seen_bytes
from prsd.spool.readsafe import UntrustedFile
from prsd.wire.fields import RecordError

if TYPE_CHECKING:
    from prsd.spool.layout import SpoolLayout

log = get_logger("prsd.leader")

INBOX_GRACE_S = 600.0
MAX_LOGGED_ONE_BY_ONE = 5
NOT_UTF8 = (
    "its name is not UTF-8, so it cannot become a job (no id, log line or status row "
    "can carry it): rename the folder and submit it again"
)
INCOMPLETE = (
    "it held no job.yaml for {grace:.0f} s after the leader first saw it: "
    "submit with `prsctl submit`, or write job.yaml last"
)


def shown(name: str) -> str:
    """A name as logs and status show it: UTF-8, undecodable bytes as ``\\xff`` (pure)."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def decodable(name: str) -> bool:
    """True when ``name`` (as listed, surrogate-escaped) is valid UTF-8 (pure)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass
class InboxSweep:
    """Incomplete inbox folders (name and inode -> first seen, wall-clock seconds),
    kept in ``leader/inbox_seen.json`` across restarts and take-overs."""

    grace_s: float = INBOX_GRACE_S
    first_seen: dict[tuple[str, int], float] = field(default_factory=dict)
    failed: set[tuple[str, int]] = field(default_factory=set)  # already logged
    expiry: RefusedExpiry = field(default_factory=RefusedExpiry)
    _stamp: tuple[int, int] | None = None  # the record as last read or written
    _write_failed: bool = False

    def sweep(self, spool: SpoolLayout, incomplete: list[tuple[str, int]], now: float) -> None:
        """Refuse undecodable names now and incomplete folders past the grace period;
        start the removal of refused folders past their retention (``now``: the
        leader's monotonic clock, for its cadence).

        ``incomplete`` lists the (name, inode) of inbox folders without a job file;
        folders with a job file and an undecodable name are passed here too.
        """
        self.expiry.maybe_start(spool.refused, now)
        self._read_record(spool)
        before = dict(self.first_seen)
        seen = set(incomplete)
        for key in list(self.first_seen):
            if key not in seen:
                del self.first_seen[key]  # completed, taken in or removed
        refused: list[dict[str, object]] = []
        wall = time.time()
        for name, ino in incomplete:
            if not decodable(name):
                refused += self._refuse(spool, name, ino, NOT_UTF8)
                continue
            since = self.first_seen.setdefault((name, ino), wall)
            if wall - since >= self.grace_s:
                refused += self._refuse(spool, name, ino, INCOMPLETE.format(grace=self.grace_s))
        _report(refused, spool)
        if self.first_seen != before:
            self._write_record(spool)

    def _read_record(self, spool: SpoolLayout) -> None:
        """Take in the record when another leader (or an earlier run) wrote it: the
        earlier of the two sightings of a folder counts."""
        path = spool.inbox_seen
        try:
            info = os.lstat(path)
        except OSError:
            return
        if (info.st_ino, info.st_mtime_ns) == self._stamp:
            return
        self._stamp = (info.st_ino, info.st_mtime_ns)
        try:
            recorded = read_seen(path)
        except (UntrustedFile, RecordError) as exc:
            log.warning("ignored the inbox's first-seen record", error=str(exc))
            return
        for key, since in recorded.items():
            if since < self.first_seen.get(key, since + 1):
                self.first_seen[key] = since

    def _write_record(self, spool: SpoolLayout) -> None:
        path = spool.inbox_seen
        try:
            write_atomic(path, seen_bytes(self.first_seen), mode=0o600, durable=False)
            info = os.lstat(path)
        except OSError as exc:
            if not self._write_failed:
                self._write_failed = True
                log.warning("cannot write the inbox's first-seen record", error=str(exc))
            return
        self._write_failed = False
        self._stamp = (info.st_ino, info.st_mtime_ns)

    def _refuse(
        self, spool: SpoolLayout, name: str, ino: int, reason: str
    ) -> list[dict[str, object]]:
        """Move one folder aside; its record in a list (empty when it did not move)."""
        src = spool.queued(name)
        try:
            info = os.lstat(src)
        except OSError:
            return []
        if not stat.S_ISDIR(info.st_mode) or info.st_ino != ino:
            return []  # replaced since the listing: looked at again next round
        folder = spool.refused
        aside = f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(4)}"
        record = {
            "inbox_name": shown(name),
            "uid": info.st_uid,
            "gid": info.st_gid,
            "reason": reason,
            "moved_to": str((folder / aside).relative_to(spool.root)),
            "at": datetime.now(UTC).isoformat(),
        }
        try:
            folder.mkdir(mode=0o755, exist_ok=True)
            if not move_verified(src, folder / aside):
                return []
            data = json.dumps(record, indent=1).encode()
            write_atomic(folder / f"{aside}.json", data, durable=False)
        except OSError as exc:
            if (name, ino) not in self.failed:
                self.failed.add((name, ino))
                log.warning("cannot move an inbox folder aside", name=shown(name), error=str(exc))
            return []
        self.first_seen.pop((name, ino), None)
        return [record]


def _report(refused: list[dict[str, object]], spool: SpoolLayout) -> None:
    """Log each refusal of a round; many at once (thousands of empty folders) in one line."""
    if len(refused) <= MAX_LOGGED_ONE_BY_ONE:
        for r in refused:
            log.warning("refused an inbox folder; moved aside", **r)
        return
    log.warning(
        "refused inbox folders; moved aside",
        count=len(refused),
        first=[r["inbox_name"] for r in refused[:MAX_LOGGED_ONE_BY_ONE]],
        reasons=sorted({str(r["reason"]) for r in refused}),
        moved_to=f"{spool.refused.relative_to(spool.root)}/",
    )
