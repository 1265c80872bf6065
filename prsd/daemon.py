"""Entry points: ``prsd run | leader | agent``. Wiring only: arguments -> the right loop."""

from __future__ import annotations

import argparse
import functools
import logging
import os
import signal
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import anyio

from prsd.agent.agent import EXIT_IDLE, Agent, AgentOptions
from prsd.agent.nodeid import ensure_node_id_free
from prsd.cli import console
from prsd.cli.buildable import refuse_unbuildable
from prsd.cli.jobnotes import print_notes
from prsd.doctor import cli as doctor_cli
from prsd.doctor import require_safe_spool
from prsd.doctor.probes import MIN_FREE_BYTES
from prsd.errors import ExitCode, PrsdError, UnsafeSpoolError
from prsd.leader.election import Election
from prsd.leader.leader import NODE_LEASE_S, Leader
from prsd.logconfig import configure, get_logger
from prsd.sdnotify import serve_notified
from prsd.storage.faults import fault_line, wait_until_writable
from prsd.storage.fstype import is_local_spool
from prsd.storage.heartbeat import HEARTBEAT_INTERVAL_S
from prsd.storage.jobid import sanitize_name
from prsd.storage.layout import SpoolLayout, valid_node_id
from prsd.storage.lease import LEADER_HEARTBEAT_S, LEADER_LEASE_S
from prsd.storage.spool import open_spool
from prsd.storage.watch import ring_on_local_changes
from prsd.submit import submit

if TYPE_CHECKING:
    from prsd.embedded import LeftEarly

log = get_logger("prsd")


def default_spool() -> Path:
    """``--spool`` beats ``PRSD_SPOOL`` beats ``./spool``."""
    return Path(os.environ.get("PRSD_SPOOL") or "spool")


def default_node_id() -> str:
    host = os.environ.get("PRSD_NODE_ID") or socket.gethostname().split(".")[0]
    return host if valid_node_id(host) else sanitize_name(host)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="prsd", description="prsd: parallel run service")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser(
        "run", help="run one job or pipeline (a YAML file, or a folder with job.yaml) end to end"
    )
    run.add_argument("job_dir", type=Path)
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
    run.add_argument("--node-id", default=None, help="this node's id (default: host name)")
    run.add_argument(
        "--quiet", action="store_true", help="do not print the job's notes (keys not used ...)"
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
        help=f"exit {EXIT_IDLE} when no job needs this node",
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
    for sp in (run, leader, agent):
        sp.add_argument("--log-level", default="WARNING" if sp is run else "INFO")
    for sp in (leader, agent):
        doctor_cli.add_unsafe_flag(sp)
    doctor_cli.add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    configure(getattr(args, "log_level", "WARNING"))
    try:
        if args.command == "doctor":
            return doctor_cli.run(args)
        spool = open_spool(args.spool or default_spool())
        if args.command == "run":
            return _run(spool, args)
        unsafe = args.unsafe_spool or doctor_cli.unsafe_from_env()
        # A full or read-only spool heals: wait for it here rather than fail the
        # start-up check (exit 3 means a file system that can never hold a spool).
        wait_until_writable(
            spool.root,
            lambda why: log.error("waiting for the spool", why=why),
            min_free_bytes=MIN_FREE_BYTES,
        )
        require_safe_spool(spool.root, unsafe=unsafe)  # refuse a spool that fails, with why
        if args.command == "leader":
            return _leader(spool, args)
        return _agent(spool, args)
    except UnsafeSpoolError as exc:
        console.error(exc.one_line())
        return ExitCode.SPOOL_REFUSED
    except PrsdError as exc:
        console.error(exc.one_line())
        return ExitCode.CONFIG
    except OSError as exc:
        line = fault_line(exc, args.command, args.spool or default_spool())
        if line is None:
            raise
        console.error(line)
        return ExitCode.FAILURE
    except KeyboardInterrupt:
        return 130


def _node_id(args: argparse.Namespace) -> str:
    node_id = args.node_id or default_node_id()
    if not valid_node_id(node_id):
        raise PrsdError(f"--node-id {node_id!r}: use letters, digits, '_', '.' and '-' only")
    return str(node_id)


def _run(spool: SpoolLayout, args: argparse.Namespace) -> int:
    from prsd.cli.runview import progress_view, write_line
    from prsd.embedded import LeftEarly, run_interruptible
    from prsd.pipelinerun import pipeline_file, run_pipeline_here

    pipeline = pipeline_file(args.job_dir)
    if pipeline is not None:
        node = _node_id(args)
        return run_pipeline_here(pipeline, spool, args.overrides, args.name, node, quiet=args.quiet)
    check = functools.partial(refuse_unbuildable, spool.root, args.job_dir)
    job_id, spec = submit(
        args.job_dir, spool, name=args.name, overrides=args.overrides, check=check
    )
    write_line(f"job {job_id}")
    print_notes(spec, (args.job_dir, spool.job(job_id).root), "prsd", quiet=args.quiet)
    options = AgentOptions(node_id=_node_id(args))
    view = progress_view()
    try:
        final = anyio.run(
            lambda: run_interruptible(spool, job_id, options, on_progress=view.show, say=view.note)
        )
    finally:
        view.close()
    if isinstance(final, LeftEarly):
        write_line(left_early_line(spool, job_id, final))
        return 130
    result = spool.job(job_id).log_tree.job_result
    try:
        write_line(result.read_text(encoding="utf-8").rstrip())
    except OSError:
        write_line(f"{final.state}: {final.reason}")
    if final.output:
        write_line(f"output {final.output}")
    return final.exit_code


def left_early_line(spool: SpoolLayout, job_id: str, left: LeftEarly) -> str:
    """What a second Ctrl-C leaves behind, said in one line."""
    if left.ended:
        return f"left at once: job {job_id} ended {left.ended}; its workers stop with this process"
    root = spool.root
    return (
        f"left at once: job {job_id} stays queued in the spool {root} for a fleet "
        f"(`prsd leader --spool {root}` and `prsd agent --spool {root}` run it); "
        f"see it with `prsctl status {job_id} --spool {root}`, "
        f"cancel it with `prsctl cancel {job_id} --spool {root}`"
    )


def _leader(spool: SpoolLayout, args: argparse.Namespace) -> int:
    election = Election(spool, lease_s=args.lease_s, beat_s=args.heartbeat_s)
    leader = Leader(spool, election=election, node_lease_s=args.node_lease_s)
    console.say(
        f"prsd leader: spool {spool.root}, host {socket.gethostname()} (pid {os.getpid()}): "
        f"leads when it holds the lease (lease {args.lease_s:g} s, nodes presumed lost after "
        f"{args.node_lease_s:g} s)"
    )

    async def lead() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(leader.serve)
            if is_local_spool(spool.root):
                bell = leader.links.leader_bell
                # Under jobs/: commits and hand-backs, not log lines, results or status.
                wakes = frozenset({"done", "returned", "void"})
                tg.start_soon(ring_on_local_changes, [spool.inbox, spool.jobs], bell, wakes)
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    tg.cancel_scope.cancel()
                    break

    anyio.run(serve_notified, lead, f"leader of {spool.root}")
    return ExitCode.OK


def _agent(spool: SpoolLayout, args: argparse.Namespace) -> int:
    node_id = _node_id(args)
    ensure_node_id_free(spool, node_id, socket.gethostname())  # one agent per node id
    options = AgentOptions(
        node_id=node_id,
        exit_when_idle=args.exit_when_idle,
        drain_grace_s=args.drain_grace_s,
        heartbeat_interval_s=args.heartbeat_s,
        slots=args.slots,
    )
    agent = Agent(spool, options)
    console.say(
        f"prsd agent: spool {spool.root}, node {node_id} on {socket.gethostname()} "
        f"(pid {os.getpid()}): {agent.node_slots()} worker slots, {agent.gpus.count} GPUs"
    )
    codes: list[int] = []

    async def serve() -> None:
        codes.append(await agent.run(signals=True))

    anyio.run(serve_notified, serve, f"serving {spool.root} as {agent.node_id}")
    return codes[0] if codes else ExitCode.OK


def console_main() -> None:
    """The ``prsd`` command: :func:`main`, then :func:`leave`."""
    leave(main())


def leave(code: int) -> NoReturn:
    """Exit with ``code`` once stdout, stderr and the log handlers are flushed.

    Every file prsd writes is closed and every thread it started has ended when
    :func:`main` returns, so the interpreter's teardown of every module (60-120 ms,
    more with pandas loaded) is skipped: ``prsd run``'s wall time is the user's.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    logging.shutdown()
    os._exit(code)


if __name__ == "__main__":
    console_main()
