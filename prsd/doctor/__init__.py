"""``prsd doctor``: can this spool keep the protocol's promises? Quick and full checks.

The quick part (mount type, permissions, free space, single-node ``O_EXCL`` and rename
semantics, clock skew) takes milliseconds; ``prsd leader`` and ``prsd agent`` run it
at start-up and refuse a failing spool with the reason. The full part adds a race of
two real processes for one pool of tasks and, with a second mount of the share
(``--peer-mount``), the time a listing takes to show another client's change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prsd.doctor.findings import Finding, Report
from prsd.doctor.probes import quick_checks, scratch_dir
from prsd.doctor.race import check_listing, check_race
from prsd.errors import UnsafeSpoolError

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["LISTING_TIMEOUT_S", "Finding", "Report", "full_checks", "require_safe_spool"]

LISTING_TIMEOUT_S = 60.0


def full_checks(
    spool: Path,
    *,
    peer_mount: Path | None = None,
    unsafe: bool = False,
    listing_timeout_s: float = LISTING_TIMEOUT_S,
) -> Report:
    """Every check; ``peer_mount`` is the same spool folder seen through another mount."""
    report = Report(str(spool))
    quick_checks(report, spool, unsafe=unsafe)
    if any(f.check == "permissions" for f in report.failures()):
        return report
    with scratch_dir(spool) as scratch:
        peer_scratch = peer_mount / scratch.relative_to(spool) if peer_mount else None
        check_race(report, scratch, peer_scratch)
        if peer_scratch is not None:
            check_listing(report, scratch, peer_scratch, listing_timeout_s)
    return report


def require_safe_spool(spool: Path, *, unsafe: bool = False) -> Report:
    """The start-up check of ``prsd leader`` and ``prsd agent``.

    Raises:
        UnsafeSpoolError: a quick check failed (the message gives every reason).
    """
    report = Report(str(spool))
    try:
        quick_checks(report, spool, unsafe=unsafe)
    except OSError as exc:
        raise UnsafeSpoolError(f"spool {spool} refused: the self-test failed: {exc}") from exc
    if report.failures():
        raise UnsafeSpoolError(f"spool {spool} refused: {report.reason()}")
    return report
