"""Entry points: ``prsd run | leader | agent``. Wiring only: arguments -> the right loop."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path

import anyio

from prsd.agent.agent import Agent, AgentOptions
from prsd.cli import console
from prsd.errors import ExitCode, PrsdError
from prsd.leader.leader import Leader
from prsd.logconfig import configure
from prsd.storage.jobid import sanitize_name
from prsd.storage.layout import SpoolLayout, valid_node_id
from prsd.storage.spool import open_spool
from prsd.submit import submit


def default_spool() -> Path:
    """``--spool`` beats ``PRSD_SPOOL`` beats ``./spool``."""
    return Path(os.environ.get("PRSD_SPOOL") or "spool")


def default_node_id() -> str:
    host = socket.gethostname().split(".")[0]
    return host if valid_node_id(host) else sanitize_name(host)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="prsd", description="prsd: parallel run service")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one job folder end to end with a local spool")
    run.add_argument("job_dir", type=Path)
    run.add_argument("--spool", type=Path, default=None, help="spool folder (default ./spool)")
    run.add_argument("--name", default=None, help="job name (default: the spec's)")
    run.add_argument("--node-id", default=None, help="this node's id (default: host name)")
    leader = sub.add_parser("leader", help="run the leader daemon")
    leader.add_argument("--spool", type=Path, default=None)
    agent = sub.add_parser("agent", help="run the agent daemon on this machine")
    agent.add_argument("--spool", type=Path, default=None)
    agent.add_argument("--node-id", default=None)
    agent.add_argument("--exit-when-idle", action="store_true")
    for sp in (run, leader, agent):
        sp.add_argument("--log-level", default="WARNING" if sp is run else "INFO")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    configure(args.log_level)
    try:
        spool = open_spool(args.spool or default_spool())
        if args.command == "run":
            return _run(spool, args)
        if args.command == "leader":
            anyio.run(_lead, spool)
            return ExitCode.OK
        return _agent(spool, args)
    except PrsdError as exc:
        console.error(exc.one_line())
        return ExitCode.CONFIG
    except KeyboardInterrupt:
        return 130


def _node_id(args: argparse.Namespace) -> str:
    node_id = args.node_id or default_node_id()
    if not valid_node_id(node_id):
        raise PrsdError(f"--node-id {node_id!r}: use letters, digits, '_', '.' and '-' only")
    return str(node_id)


def _run(spool: SpoolLayout, args: argparse.Namespace) -> int:
    from prsd.embedded import run_until_done

    job_id, _ = submit(args.job_dir, spool, name=args.name)
    console.say(f"job {job_id}")
    options = AgentOptions(node_id=_node_id(args))
    final = anyio.run(lambda: run_until_done(spool, job_id, options, on_progress=console.say))
    result = spool.job(job_id).logs / "job_result.txt"
    try:
        console.say(result.read_text(encoding="utf-8").rstrip())
    except OSError:
        console.say(f"{final.state}: {final.reason}")
    if final.output:
        console.say(f"output {final.output}")
    return final.exit_code


async def _lead(spool: SpoolLayout) -> None:
    await Leader(spool).run()


def _agent(spool: SpoolLayout, args: argparse.Namespace) -> int:
    agent = Agent(spool, AgentOptions(node_id=_node_id(args)))
    anyio.run(agent.run)
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
