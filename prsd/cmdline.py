"""``prsd``'s command line: the parser of ``prsd run | leader | agent | doctor`` and its
defaults (the spool, this node's id).

It loads neither daemon nor the doctor's checks: ``prsd`` parses its arguments before
it imports the code of the command it runs (``tests/unit/test_import_paths.py``).

Errors: :func:`node_id_of` raises :class:`~prsd.errors.PrsdError` for a node id that
is not letters, digits, ``_``, ``.`` and ``-``; argparse exits 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
from pathlib import Path

from prsd.errors import ExitCode, PrsdError
from prsd.spool.heartbeatrecord import HEARTBEAT_INTERVAL_S
from prsd.spool.jobid import sanitize_name
from prsd.spool.layout import valid_node_id
from prsd.spool.lease import LEADER_HEARTBEAT_S, LEADER_LEASE_S, NODE_LEASE_S


def default_spool() -> Path:
    """``--spool`` beats ``PRSD_SPOOL`` beats ``./spool``."""
    return Path(os.environ.get("PRSD_SPOOL") or "spool")


MACHINE_ID_FILE = Path("/etc/machine-id")


def default_node_id() -> str:
    """``PRSD_NODE_ID``, else ``<short host name>-<first 8 hex of /etc/machine-id>``.

    The machine id makes the default unique per machine even where host names repeat
    (cloned VMs: those need their machine id regenerated, as cloning tools do); with
    no machine id the short host name alone.
    """
    given = os.environ.get("PRSD_NODE_ID")
    if given:
        return given if valid_node_id(given) else sanitize_name(given)
    host = socket.gethostname().split(".")[0]
    host = host if valid_node_id(host) else sanitize_name(host)
    try:
        machine = MACHINE_ID_FILE.read_text(encoding="ascii").strip()[:8].lower()
    except OSError:
        machine = ""
    return f"{host}-{machine}" if re.fullmatch(r"[0-9a-f]{8}", machine) else host


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="prsd", description="prsd: parallel run service")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser(
        "run", help="run one job or pipeline (a YAML file, or a folder with job.yaml) end to end"
    )
    run.add_argument("job_dir", type=Path, nargs="?")
    run.add_argument(
        "--retry",
        metavar="JOB",
        default=None,
        help="run here again what a job (or pipeline) left failed, as `prsctl retry` queues it",
    )
    run.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="change a key of the YAML before it is checked (az ml syntax, repeatable)",
    )
    run.add_argument("--spool", type=Path, default=None, help="spool folder (default ./spool)")
    run.add_argument("--name", default=None, help="job name (default: the spec's)")
    run.add_argument(
        "--node-id",
        default=None,
        help="this node's id (default: <short host name>-<machine id, 8 hex>)",
    )
    run.add_argument(
        "--quiet", action="store_true", help="do not print the job's notes (keys not used ...)"
    )
    run.add_argument(
        "--embedded",
        action="store_true",
        help="run the job in this process even where a leader and agents serve the spool "
        "(by default a job is handed to them)",
    )
    run.add_argument(
        "--no-fork-server",
        action="store_true",
        help="start every worker as a new interpreter (by default workers that run as this "
        "user under this interpreter are forked from a pre-imported one)",
    )
    leader = sub.add_parser("leader", help="run the leader daemon (any number; one leads)")
    leader.add_argument("--spool", type=Path, default=None)
    leader.add_argument(
        "--lease-s",
        type=float,
        default=LEADER_LEASE_S,
        help="a standby takes over when the leader's heartbeat is unchanged this long",
    )
    leader.add_argument(
        "--heartbeat-s", type=float, default=LEADER_HEARTBEAT_S, help="leader heartbeat period"
    )
    leader.add_argument(
        "--node-lease-s",
        type=float,
        default=NODE_LEASE_S,
        help="an agent whose heartbeat is unchanged this long is presumed dead",
    )
    agent = sub.add_parser("agent", help="run the agent daemon on this machine")
    agent.add_argument("--spool", type=Path, default=None)
    agent.add_argument("--node-id", default=None)
    agent.add_argument(
        "--exit-when-idle",
        action="store_true",
        help=f"exit {int(ExitCode.AGENT_IDLE)} when no job needs this node",
    )
    agent.add_argument(
        "--drain-grace-s",
        type=float,
        default=60.0,
        help="on SIGTERM: how long running mini-batches may take to finish",
    )
    agent.add_argument(
        "--heartbeat-s", type=float, default=HEARTBEAT_INTERVAL_S, help="agent heartbeat period"
    )
    agent.add_argument("--slots", type=int, default=None, help="worker slots (default: CPUs)")
    agent.add_argument(
        "--no-fork-server",
        action="store_true",
        help="start every worker as a new interpreter (by default workers of jobs that run "
        "as the agent's user under its interpreter are forked from a pre-imported one)",
    )
    for sp in (run, leader, agent):
        sp.add_argument("--log-level", default="WARNING" if sp is run else "INFO")
    for sp in (leader, agent):
        add_unsafe_flag(sp)
    add_doctor_parser(sub)
    return p


def add_unsafe_flag(parser: argparse.ArgumentParser) -> None:
    """``--unsafe-spool``: accept a blob mount (double claims expected)."""
    parser.add_argument(
        "--unsafe-spool",
        action="store_true",
        help="accept a spool on an object-store mount (s3fs, rclone, blobfuse2...): "
        "tasks may run twice",
    )


def add_doctor_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``doctor`` subcommand (run by :mod:`prsd.doctor.cli`)."""
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
        default=None,
        help="seconds to wait for a change to show through the peer mount (default 60)",
    )
    add_unsafe_flag(p)


def node_id_of(args: argparse.Namespace) -> str:
    """``--node-id``, else :func:`default_node_id`; checked."""
    node_id = args.node_id or default_node_id()
    if not valid_node_id(node_id):
        raise PrsdError(f"--node-id {node_id!r}: use letters, digits, '_', '.' and '-' only")
    return str(node_id)
