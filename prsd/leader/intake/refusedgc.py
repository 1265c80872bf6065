"""Refused inbox folders removed after their retention (``PRSD_REFUSED_KEEP_S``).

Promise: a folder the leader moved aside into ``jobs/.refused/<name>/`` whose record
``<name>.json`` says it was refused longer ago than the retention (default 7 days)
is removed. Root never removes the user's files itself: the folder is opened
without following a link, and its content is removed by the owner side of the
folder's owner (:mod:`prsd.asowner`: a process with that user's ids when the daemons
are root), so the kernel decides what may go; only when the folder is then empty
does the leader remove it and its record, both names in its own ``jobs/.refused/``.
A folder whose owner is not the one its record names, or in which something is left
(a file of another user's, say), stays with its record, and the leader's log says so
once. The folders are looked at once per :data:`CHECK_EVERY_S` seconds of the
leader's clock (as often as the retention when that is shorter), in a thread of their own (one owner side per user, not per folder),
so thousands of refused folders never hold up a leader's round.

``prsctl gc`` asks for a user's refused folders at once (a ``discard`` request,
:func:`discard_refused`): the same removal, for the folder's owner, root or a member
of the admin group.

Errors: none raised; whatever cannot be removed is logged once and looked at again
at the next check (a request is answered with why).
"""

from __future__ import annotations

import os
import pwd
import threading
import time
from typing import TYPE_CHECKING

from prsd.asowner.side import owner_side
from prsd.errors import PrsdError
from prsd.logconfig import get_logger
from prsd.spool.inboxrecords import refusals
from prsd.tunables import refused_keep_s

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.asowner.side import OwnerSide

log = get_logger("prsd.leader")

CHECK_EVERY_S = 60.0
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class RefusedExpiry:
    """The removal of expired refused folders: started at most once per check period."""

    def __init__(self, keep_s: float | None = None, every_s: float = CHECK_EVERY_S) -> None:
        self.keep_s = refused_keep_s() if keep_s is None else keep_s
        self.every_s = min(every_s, max(self.keep_s, 1.0))  # a short retention is checked as often
        self._last: float | None = None
        self._thread: threading.Thread | None = None
        self._said: set[str] = set()  # folders already logged as kept

    def maybe_start(self, folder: Path, now: float) -> None:
        """Start a removal round in a thread when one is due and none is running."""
        if self._last is not None and now - self._last < self.every_s:
            return
        if self._thread is not None and self._thread.is_alive():
            return
        self._last = now
        self._thread = threading.Thread(
            target=self.remove_expired, args=(folder,), name="refused folders", daemon=True
        )
        self._thread.start()

    def remove_expired(self, folder: Path) -> int:
        """Remove the folders in ``folder`` past the retention; how many went."""
        before = time.time() - self.keep_s
        due: dict[tuple[int, int], list[str]] = {}
        for r in refusals(folder):
            if r.at <= before:
                gid = r.gid if r.gid is not None else _primary_group(r.uid)
                due.setdefault((r.uid, gid), []).append(r.aside)
        removed = 0
        for (uid, gid), asides in due.items():
            side = owner_side(uid, gid)
            try:
                removed += sum(self._remove(side, folder, a, uid) for a in asides)
            finally:
                side.close()
        return removed

    def _remove(self, side: OwnerSide, folder: Path, aside: str, uid: int) -> bool:
        why = remove_refused(side, folder, aside, uid)
        if why is not None:
            return self._kept(aside, why)
        log.info("removed a refused inbox folder past its retention", moved_to=aside)
        return True

    def _kept(self, aside: str, why: str) -> bool:
        if aside not in self._said:
            self._said.add(aside)
            log.warning("a refused inbox folder past its retention is kept", name=aside, why=why)
        return False


def remove_refused(side: OwnerSide, folder: Path, aside: str, uid: int) -> str | None:
    """Remove the refused folder ``folder/aside`` of ``uid`` and its record: its content
    by ``side`` (the owner's ids), then the emptied folder and the record by this
    process (the daemons, whose ``jobs/.refused/`` it is). None when both went, else
    why not (then both stay)."""
    try:
        fd = os.open(folder / aside, _DIR)
    except FileNotFoundError:
        fd = -1  # the folder went already: its record goes too
    except OSError as exc:
        return f"cannot open it: {exc.strerror}"
    try:
        if fd >= 0:
            info = os.fstat(fd)
            if info.st_uid != uid:
                return f"it belongs to uid {info.st_uid}, not {uid}"
            left = side.empty(fd)
            if left:
                return f"{left} entries its owner may not remove"
            os.rmdir(folder / aside)
        os.unlink(folder / f"{aside}.json")
    except (PrsdError, OSError) as exc:
        return str(exc)
    finally:
        if fd >= 0:
            os.close(fd)
    return None


def discard_refused(folder: Path, aside: str, asker_uid: int, admin: bool) -> tuple[bool, str]:
    """``prsctl gc``'s request to remove the refused folder ``aside`` of ``folder``
    (``jobs/.refused/``) now: (removed, one line for the asker). Only the folder's
    owner (as its record says), root and ``admin`` (a member of the admin group) may;
    the content goes with the owner's ids, as after the retention."""
    record = next((r for r in refusals(folder) if r.aside == aside), None)
    if record is None:
        return False, f"no refused inbox folder {aside}"
    if not admin and asker_uid not in (0, record.uid):
        return False, (
            f"refused inbox folder {aside} is not yours: only its owner, root or members "
            "of PRSD_ADMIN_GROUP may remove it"
        )
    gid = record.gid if record.gid is not None else _primary_group(record.uid)
    side = owner_side(record.uid, gid)
    try:
        why = remove_refused(side, folder, aside, record.uid)
    finally:
        side.close()
    if why is not None:
        return False, f"refused inbox folder {aside} was kept: {why}"
    log.info("removed a refused inbox folder on request", moved_to=aside, by=asker_uid)
    return True, f"removed refused inbox folder {aside}"


def _primary_group(uid: int) -> int:
    """The user's primary group (a record written before gids were kept); the uid's own
    number for a uid without a password entry."""
    try:
        return pwd.getpwuid(uid).pw_gid
    except KeyError:
        return uid
