"""``prsd doctor --spool DIR [--peer-mount DIR] [--unsafe-spool]``: print the checks' findings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from prsd.cli import console
from prsd.doctor import LISTING_TIMEOUT_S, full_checks
from prsd.errors import ExitCode, SpoolError
from prsd.spool.fstype import Level

if TYPE_CHECKING:
    import argparse


def unsafe_from_env() -> bool:
    """``PRSD_UNSAFE_SPOOL=1`` (the systemd environment file) means ``--unsafe-spool``."""
    return os.environ.get("PRSD_UNSAFE_SPOOL", "").strip().lower() in ("1", "yes", "true")


def add_unsafe_flag(parser: argparse.ArgumentParser) -> None:
    """``--unsafe-spool``: accept a blob mount (double claims expected)."""
    parser.add_argument(
        "--unsafe-spool",
        action="store_true",
        help="accept a spool on an object-store mount (s3fs, rclone, blobfuse2...): "
        "tasks may run twice",
    )


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``doctor`` subcommand."""
    p = sub.add_parser("doctor", help="check that a spool's file system keeps prsd's promises")
    p.add_argument("--spool", type=Path, required=True, help="the spool folder to check")
    p.add_argument(
        "--peer-mount",
        type=Path,
        default=None,
        help="the same spool folder through a second mount of the share (another client)",
    )
    p.add_argument(
        "--listing-timeout",
        type=float,
        default=LISTING_TIMEOUT_S,
        help="seconds to wait for a change to show through the peer mount",
    )
    add_unsafe_flag(p)


def run(args: argparse.Namespace) -> int:
    """Run every check and print the report; exit 0 (usable) or 3 (refused).

    Raises:
        SpoolError: the spool folder (or the peer mount) is not a folder.
    """
    spool: Path = args.spool.absolute()
    peer: Path | None = args.peer_mount.absolute() if args.peer_mount else None
    for folder in (spool, peer):
        if folder is not None and not folder.is_dir():
            raise SpoolError(f"{folder} is not a folder")
    report = full_checks(
        spool,
        peer_mount=peer,
        unsafe=args.unsafe_spool or unsafe_from_env(),
        listing_timeout_s=args.listing_timeout,
    )
    for line in report.lines():
        console.say(line)
    return ExitCode.SPOOL_REFUSED if report.level is Level.FAIL else ExitCode.OK
