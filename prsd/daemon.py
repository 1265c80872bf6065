"""Entry points: ``prsd run | leader | agent | doctor``. Wiring only: arguments -> the
right loop (the parser is :mod:`prsd.cmdline`; ``prsd run`` is :mod:`prsd.runcmd`).

Each command imports only what it runs: the leader's modules are not loaded by
``prsd agent`` nor the agent's by ``prsd leader`` (``tests/unit/test_import_paths.py``),
so a daemon's start pays for its own code only.

Errors: :func:`main` turns each error it knows into one line on stderr and its exit
code (an unsafe spool 3, a node id held by another agent 4, any other
:class:`~prsd.errors.PrsdError` 2, a storage fault 1, Ctrl-C 130); anything else
propagates.
"""

from __future__ import annotations

import logging
import math
import os
import secrets
import signal
import socket
import sys
from functools import partial
from typing import TYPE_CHECKING, NoReturn

import anyio

from prsd.cli import console
from prsd.cmdline import default_spool, node_id_of, parser
from prsd.errors import ExitCode, PrsdError, UnsafeSpoolError
from prsd.logconfig import configure, get_logger, load_now
from prsd.spool.faults import fault_line
from prsd.spool.nodehold import NodeIdInUse
from prsd.spool.opening import open_spool
from prsd.spool.startwait import wait_for_spool

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from prsd.agent.agent import Agent
    from prsd.agent.forks import ForkServer
    from prsd.leader.leader import Leader
    from prsd.spool.layout import SpoolLayout
    from prsd.spool.nodehold import NodeHolder

log = get_logger("prsd")

FORK_SERVER_RESTART_S = 30.0  # a fork server that died is started again after this


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    configure(getattr(args, "log_level", "WARNING"))
    try:
        if args.command == "run":
            from prsd.runcmd import run_command

            return run_command(open_spool(args.spool or default_spool()), args)
        from prsd.doctor import cli as doctor_cli  # the daemons' and the doctor's, not run's
        from prsd.doctor import require_safe_spool
        from prsd.doctor.probes import MIN_FREE_BYTES

        if args.command == "doctor":
            return doctor_cli.run(args)
        load_now()  # a daemon's first log line is not its first job's to wait for
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


def _leader(spool: SpoolLayout, args: argparse.Namespace) -> int:
    from prsd.leader.election import Election
    from prsd.leader.leader import WATCHED_TICK_S, Leader
    from prsd.sdnotify import serve_notified
    from prsd.spool.commitbell import CommitWatch
    from prsd.spool.entrybell import watch_entries
    from prsd.spool.fstype import is_local_spool

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
                inbox = watch_entries(tg, spool.inbox, bell)  # a submit wakes it at once
                # The driven jobs' commits and hand-backs; not log lines, results or status.
                leader.commit_watch = CommitWatch.open()
                if leader.commit_watch is not None:
                    listed_at = partial(_commits_listed_at, leader)
                    tg.start_soon(leader.commit_watch.ring, bell, listed_at)
                    if inbox:  # no step waits for a timer to see them
                        leader.tick_s = WATCHED_TICK_S
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    tg.cancel_scope.cancel()
                    break

    anyio.run(serve_notified, lead, f"leader of {spool.root}", election.stalled)
    return ExitCode.OK


def _commits_listed_at(leader: Leader) -> float:
    """When the leader's next step lists a commit seen now (its earliest job's)."""
    drivers = list(leader.drivers.values())  # the step's thread may add one meanwhile
    return min((d.commits_listed_at() for d in drivers), default=-math.inf)


def _agent(spool: SpoolLayout, args: argparse.Namespace) -> int:
    from prsd.agent.agent import Agent, AgentOptions
    from prsd.agent.forks import start_fork_server
    from prsd.agent.nodeid import ensure_node_id_free, hold_node_id, keep_hold
    from prsd.sdnotify import serve_notified
    from prsd.spool.nodehold import release

    node_id = node_id_of(args)
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
    # Warm workers: a job's workers that run as this user under this interpreter are
    # forked from it (a job owned by another user spawns them, as before).
    agent = Agent(spool, options, forks=None if args.no_fork_server else start_fork_server())
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
            tg.start_soon(_keep_fork_server, agent, start_fork_server)
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


async def _keep_fork_server(agent: Agent, start: Callable[[], ForkServer | None]) -> None:
    """Serve the agent's fork server until the agent ends (then close it); one that died
    is started again after FORK_SERVER_RESTART_S, for the jobs taken on after that (its
    jobs' workers are spawned meanwhile, and the runs that had it keep spawning)."""
    while agent.forks is not None:
        forks = agent.forks
        try:
            await forks.serve()
        finally:
            forks.close()
        log.warning("the fork server is gone: workers are spawned until it starts again")
        agent.forks = None
        await anyio.sleep(FORK_SERVER_RESTART_S)
        agent.forks = start()


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
