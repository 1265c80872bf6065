"""``prsd doctor --spool DIR [--peer-mount DIR] [--unsafe-spool]``: print the checks' findings.

Its parser is :func:`prsd.cmdline.add_doctor_parser` (the parser loads no check).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from prsd.cli import console
from prsd.doctor import LISTING_TIMEOUT_S, full_checks
from prsd.errors import ExitCode, SpoolError
from prsd.spool.fstype import Level

if TYPE_CHECKING:
    import argparse
    from pathlib import Path


def unsafe_from_env() -> bool:
    """``PRSD_UNSAFE_SPOOL=1`` (the systemd environment file) means ``--unsafe-spool``."""
    return os.environ.get("PRSD_UNSAFE_SPOOL", "").strip().lower() in ("1", "yes", "true")


def run(args: argparse.Namespace) -> int:
    """Run every check and print the report; exit 0 (usable) or 3 (refused).

    Raises:
        SpoolError: the spool folder (or the peer mount) is not a folder.
    """
    spool: Path = args.spool.absolute()
    timeout: float | None = args.listing_timeout
    peer: Path | None = args.peer_mount.absolute() if args.peer_mount else None
    for folder in (spool, peer):
        if folder is not None and not folder.is_dir():
            raise SpoolError(f"{folder} is not a folder")
    report = full_checks(
        spool,
        peer_mount=peer,
        unsafe=args.unsafe_spool or unsafe_from_env(),
        listing_timeout_s=LISTING_TIMEOUT_S if timeout is None else timeout,
    )
    for line in report.lines():
        console.say(line)
    return ExitCode.SPOOL_REFUSED if report.level is Level.FAIL else ExitCode.OK
