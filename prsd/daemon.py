"""Entry points: ``prsd run | leader | agent``. Wiring only: arguments -> the right loop.

Each command imports only what it runs: the leader's modules are not loaded by
``prsd agent`` nor the agent's by ``prsd leader`` (``tests/unit/test_import_paths.py``),
so a daemon's start pays for its own code only.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import re
import secrets
import signal
import socket
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import anyio

from prsd.cli import console
from prsd.doctor import cli as doctor_cli
from prsd.doctor import require_safe_spool
from prsd.doctor.probes import MIN_FREE_BYTES
from prsd.errors import ExitCode, PrsdError, UnsafeSpoolError
from prsd.logconfig import configure, get_logger
from prsd.storage.faults import fault_line
from prsd.storage.heartbeat import HEARTBEAT_INTERVAL_S
from prsd.storage.jobid import sanitize_name
from prsd.storage.layout import SpoolLayout, valid_node_id
from prsd.storage.lease import LEADER_HEARTBEAT_S, LEADER_LEASE_S, NODE_LEASE_S
from prsd.storage.nodehold import NodeIdInUse
from prsd.storage.spool import open_spool
from prsd.storage.startwait import wait_for_spool

if TYPE_CHECKING:
    from collections.abc import Callable

    from prsd.agent.forks import ForkServer
    from prsd.cli.runview import ProgressView
    from prsd.embedded import LeftEarly
    from prsd.leader.finish import FinalState
    from prsd.storage.nodehold import NodeHolder

log = get_logger("prsd")


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
        if args.command == "run":
            return _run(open_spool(args.spool or default_spool()), args)
        unsafe = args.unsafe_spool or doctor_cli.unsafe_from_env()
        # A missing, unreachable, read-only or full spool heals: wait for it before
        # any check that would end the start (systemd restarts would stop at exit 2).
        spool = wait_for_spool(
            (args.spool or default_spool()).absolute(),
            lambda line: log.error(line),
            min_free_bytes=MIN_FREE_BYTES,
        )
        require_safe_spool(spool.root, unsafe=unsafe)  # refuse a spool that fails, with why
        if args.command == "leader":
            return _leader(spool, args)
        return _agent(spool, args)
    except UnsafeSpoolError as exc:
        console.error(exc.one_line())
        return ExitCode.SPOOL_REFUSED
    except NodeIdInUse as exc:
        console.error(exc.one_line())
        return ExitCode.NODE_ID_TAKEN
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
    """One job end to end: handed to the spool's daemons when they serve it (unless
    ``--embedded``), else led and served in this process."""
    from prsd.cli.buildable import refuse_unbuildable
    from prsd.cli.jobnotes import print_notes
    from prsd.cli.runview import write_line
    from prsd.pipelinerun import pipeline_file, run_pipeline_here
    from prsd.submit import submit

    if args.retry is not None:
        return _run_retry(spool, args)
    if args.job_dir is None:
        raise PrsdError("give a job (a YAML file, or a folder with job.yaml) or --retry JOB")
    pipeline = pipeline_file(args.job_dir)
    if pipeline is not None:
        node = _node_id(args)
        return run_pipeline_here(pipeline, spool, args.overrides, args.name, node, quiet=args.quiet)

    def submit_job() -> str:
        check = functools.partial(refuse_unbuildable, spool.root, args.job_dir)
        job_id, spec = submit(
            args.job_dir, spool, name=args.name, overrides=args.overrides, check=check
        )
        write_line(f"job {job_id}")
        print_notes(spec, (args.job_dir, spool.job(job_id).root), "prsd", quiet=args.quiet)
        return job_id

    return _run_job(spool, submit_job, args)


def _run_retry(spool: SpoolLayout, args: argparse.Namespace) -> int:
    """``prsd run --retry JOB``: ``prsctl retry``'s new job (or pipeline), run here."""
    from prsd.cli.access import require_owner
    from prsd.cli.runview import write_line
    from prsd.pipelinerun import retry_pipeline_here
    from prsd.read.jobs import resolve_job
    from prsd.submit import submit_retry

    if args.job_dir is not None:
        raise PrsdError("give a job to run or --retry JOB, not both")
    if spool.pipeline(args.retry).record.exists():
        return retry_pipeline_here(spool, args.retry, args.overrides, args.name, _node_id(args))
    old = resolve_job(spool, args.retry)
    require_owner(spool, old, "retry it")

    def submit_job() -> str:
        job_id, count, summary = submit_retry(spool, old, name=args.name, overrides=args.overrides)
        write_line(f"job {job_id}")
        console.warn(f"{count} mini-batches of {old} to run again: {summary}")
        return job_id

    return _run_job(spool, submit_job, args)


def _run_job(spool: SpoolLayout, submit_job: Callable[[], str], args: argparse.Namespace) -> int:
    """Submit (``submit_job`` prints the id), then follow the job the daemons run or lead
    and serve it here until it ends; its exit code."""
    from prsd.agent.forks import ForkServer
    from prsd.cli.runview import progress_view, write_line
    from prsd.embedded import LeftEarly
    from prsd.read.fleet import daemons_serve

    handed = not args.embedded and daemons_serve(spool, datetime.now(UTC))
    node_id = _node_id(args)
    # Started first: it imports the worker host while the job is taken in and split.
    forks = None if handed or args.no_fork_server else _fork_server(ForkServer)
    try:
        job_id = submit_job()
        view = progress_view()
        try:
            final = _wait_for_job(spool, job_id, node_id, handed, forks, view)
        finally:
            view.close()
    finally:
        if forks is not None:
            forks.close()
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


def _fork_server(server: type[ForkServer]) -> ForkServer | None:
    """The fork server, or None where it cannot start (its interpreter cannot be run by
    this user, say): the workers are then spawned one by one, as the daemons do."""
    try:
        return server.start()
    except OSError as exc:
        log.info("no fork server: workers are spawned", error=str(exc))
        return None


def _wait_for_job(
    spool: SpoolLayout,
    job_id: str,
    node_id: str,
    handed: bool,
    forks: ForkServer | None,
    view: ProgressView,
) -> FinalState | LeftEarly:
    """Follow the job the daemons run (``handed``), or run it here (workers forked from
    ``forks`` where they can be); how it ended."""
    from prsd.embedded import follow_interruptible, run_interruptible

    if handed:
        view.note(
            f"a leader and agents serve the spool {spool.root}: they run job {job_id} "
            "(`prsd run --embedded` runs it in this process)"
        )
        return anyio.run(
            lambda: follow_interruptible(spool, job_id, on_progress=view.show, say=view.note)
        )
    from prsd.agent.agent import AgentOptions

    options = AgentOptions(node_id=node_id)
    return anyio.run(
        lambda: run_interruptible(
            spool, job_id, options, on_progress=view.show, say=view.note, forks=forks
        )
    )


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
    from prsd.leader.election import Election
    from prsd.leader.leader import Leader
    from prsd.sdnotify import serve_notified
    from prsd.storage.fstype import is_local_spool
    from prsd.storage.watch import ring_on_local_changes

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

    anyio.run(serve_notified, lead, f"leader of {spool.root}", election.stalled)
    return ExitCode.OK


def _agent(spool: SpoolLayout, args: argparse.Namespace) -> int:
    from prsd.agent.agent import Agent, AgentOptions
    from prsd.agent.nodeid import ensure_node_id_free, hold_node_id, keep_hold
    from prsd.sdnotify import serve_notified
    from prsd.storage.nodehold import release

    node_id = _node_id(args)
    hold = hold_node_id(spool, node_id, socket.gethostname(), secrets.token_hex(8))
    try:
        ensure_node_id_free(spool, node_id, socket.gethostname())  # an older agent's beat
    except NodeIdInUse:
        release(spool, hold)
        raise
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
    lost: list[str] = []

    def on_lost(other: NodeHolder) -> None:
        lost.append(f"pid {other.pid} on host {other.host}")
        agent.request_drain(fast=True)

    async def serve() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(keep_hold, spool, hold, on_lost, args.heartbeat_s)
            codes.append(await agent.run(signals=True))
            tg.cancel_scope.cancel()

    try:
        anyio.run(serve_notified, serve, f"serving {spool.root} as {node_id}", agent.stalled)
    finally:
        if not lost:
            release(spool, hold)
    if lost:
        console.error(f"node id {node_id!r} was taken over by {lost[0]}: stopped (exit 4)")
        return ExitCode.NODE_ID_TAKEN
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
