"""``prsd run``: the leader and one local agent in one process, until the job ends.

It is the same Leader and Agent code the daemons run; in one process they also ring
each other's doorbells and pass commit hints, which only saves polling latency.

With ``interrupts`` (the command line), Ctrl-C is the user's: the first asks the
leader to cancel the job (a request in ``requests/``, as ``prsctl cancel`` does) and
waits until the job has ended and its workers have stopped; a second leaves at once
(:class:`LeftEarly`), withdrawing a cancel no leader has answered, so a job not yet
ended stays in the spool for any leader and agents serving it. :class:`CtrlC` is that
rule, shared with ``prsd run`` of a pipeline (:mod:`prsd.pipelinerun`).

:func:`follow_interruptible` is the same wait where daemons serve the spool and run
the job (``prsd run`` handed it to them): progress, Ctrl-C and the end alike, with no
leader or agent in this process.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from prsd.agent.agent import Agent, AgentOptions
from prsd.cli.jobs import read_status
from prsd.leader.election import Deposed, Election
from prsd.leader.finish import FinalState
from prsd.leader.job import Hint
from prsd.leader.leader import Leader, LeaderLinks
from prsd.leader.privatestatus import read_final
from prsd.storage.requests import remove, send_request
from prsd.wire.final import private_final_path

MAX_FINAL_BYTES = 1 << 20

if TYPE_CHECKING:
    from collections.abc import Callable

    from prsd.agent.forks import ForkServer
    from prsd.storage.layout import SpoolLayout, TaskName

PROGRESS_EVERY_S = 1.0  # the job's status document is read this often for the view
FOLLOW_EVERY_S = 0.05  # a job the daemons run: its final state is looked for this often


@dataclass(frozen=True)
class LeftEarly:
    """A second Ctrl-C: the process left without waiting; ``ended`` is the job's state
    if it had ended by then ("" when it had not: it stays for a fleet)."""

    ended: str


async def run_until_done(
    spool: SpoolLayout,
    job_id: str,
    options: AgentOptions,
    *,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    say: Callable[[str], None] | None = None,
) -> FinalState:
    """Lead and serve ``job_id`` in this process; returns how it ended."""
    final = await run_interruptible(spool, job_id, options, on_progress=on_progress, say=say)
    assert isinstance(final, FinalState)  # only a Ctrl-C leaves early
    return final


async def run_interruptible(
    spool: SpoolLayout,
    job_id: str,
    options: AgentOptions,
    *,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    say: Callable[[str], None] | None = None,
    interrupts: bool = True,
    forks: ForkServer | None = None,
) -> FinalState | LeftEarly:
    """Lead and serve ``job_id`` in this process, Ctrl-C being the user's; how it ended.

    ``on_progress`` gets the job's status document at once, every PROGRESS_EVERY_S,
    and once more at the end; ``say`` gets one-line notes for the user. ``forks``: a
    fork server (``prsd.agent.forks``) the workers are forked from where they can be;
    it is served here and closed at the end.
    """
    links = LeaderLinks()

    def on_commit(committed_job: str, task: TaskName) -> None:
        links.hints.append(Hint(committed_job, task, options.node_id))
        links.leader_bell.ring()

    leader = Leader(spool, election=Election(spool, one_job=True), links=links, only_job=job_id)
    agent = Agent(
        spool, options, bell=links.agent_bell, on_commit=on_commit, only_job=job_id, forks=forks
    )
    final: FinalState | None = None
    ctrl_c = job_ctrl_c(spool, job_id, say)
    async with anyio.create_task_group() as outer:
        if forks is not None:
            outer.start_soon(forks.serve)
        if on_progress is not None:
            outer.start_soon(_report_progress, spool, job_id, on_progress)
        if interrupts:
            outer.start_soon(ctrl_c.listen, outer.cancel_scope)
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: agent.run(until_job=job_id))
            final = await _lead_until_done(leader, job_id, say)
            agent.job_ended()
        if on_progress is not None:  # the view ends on the job's last counts
            on_progress(await anyio.to_thread.run_sync(read_status, spool, job_id))
        outer.cancel_scope.cancel()
    if ctrl_c.left:
        return await anyio.to_thread.run_sync(_left_job, spool, job_id, ctrl_c)
    assert final is not None
    return final


async def follow_interruptible(
    spool: SpoolLayout,
    job_id: str,
    *,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    say: Callable[[str], None] | None = None,
) -> FinalState | LeftEarly:
    """Wait for ``job_id``, run by the spool's daemons, to end; Ctrl-C as in
    :func:`run_interruptible` (the first cancels the job and waits, a second leaves)."""
    final: FinalState | None = None
    ctrl_c = job_ctrl_c(spool, job_id, say)
    final_path = spool.job(job_id).final
    async with anyio.create_task_group() as outer:
        if on_progress is not None:
            outer.start_soon(_report_progress, spool, job_id, on_progress)
        outer.start_soon(ctrl_c.listen, outer.cancel_scope)
        final = await _wait_for_final(final_path)
        if on_progress is not None:
            on_progress(await anyio.to_thread.run_sync(read_status, spool, job_id))
        outer.cancel_scope.cancel()
    if ctrl_c.left:
        return await anyio.to_thread.run_sync(_left_job, spool, job_id, ctrl_c)
    assert final is not None
    return final


async def _wait_for_final(final_path: Path) -> FinalState:
    """The job's final state, once its leader wrote it (looked for every FOLLOW_EVERY_S):
    the private record, with the reason, where this user may read it (the job's owner
    and its group), else the public one (the reason blanked)."""
    while True:
        if await anyio.to_thread.run_sync(final_path.exists):
            return await anyio.to_thread.run_sync(_read_final_record, final_path)
        await anyio.sleep(FOLLOW_EVERY_S)


def _read_final_record(final_path: Path) -> FinalState:
    """``final.private.json`` beside ``final_path`` when readable and whole, else ``final.json``."""
    try:
        return FinalState.from_json(Path(private_final_path(str(final_path))).read_bytes())
    except (OSError, ValueError):
        return FinalState.from_json(final_path.read_bytes())


class CtrlC:
    """The user's Ctrl-C during ``prsd run`` (of a job or a pipeline): the first asks for
    the cancel (``ask``: it returns how to withdraw it, or raises OSError) and says so;
    the second cancels ``scope`` and sets ``left``."""

    def __init__(
        self,
        what: str,
        ask: Callable[[], Callable[[], None]],
        where: Path,
        say: Callable[[str], None] | None,
    ):
        self.what = what  # "job <id>", "pipeline <id>"
        self.ask = ask
        self.where = where  # the folder the request is written in, for an error
        self.say = say or (lambda line: None)
        self.withdraw: Callable[[], None] | None = None
        self.asked = False
        self.left = False

    async def listen(self, scope: anyio.CancelScope) -> None:
        with anyio.open_signal_receiver(signal.SIGINT) as signals:
            async for _ in signals:
                if self.asked:
                    self.left = True
                    scope.cancel()
                    return
                self.asked = True
                await anyio.to_thread.run_sync(self._ask_cancel)

    def _ask_cancel(self) -> None:
        try:
            self.withdraw = self.ask()
        except OSError as exc:
            self.say(
                f"Ctrl-C: cannot ask for the cancel of {self.what} ({exc.strerror or exc} "
                f"in {self.where}); Ctrl-C again to leave it in the spool"
            )
            return
        self.say(
            f"Ctrl-C: canceling {self.what} and waiting for its workers to stop "
            "(Ctrl-C again to leave now)"
        )


def job_ctrl_c(spool: SpoolLayout, job_id: str, say: Callable[[str], None] | None) -> CtrlC:
    """Ctrl-C for one job: its cancel is a request in ``requests/`` (as ``prsctl cancel``)."""

    def ask() -> Callable[[], None]:
        request = send_request(spool, job_id, "cancel")
        return partial(remove, spool, request.name)

    return CtrlC(f"job {job_id}", ask, spool.requests, say)


def _left_job(spool: SpoolLayout, job_id: str, ctrl_c: CtrlC) -> LeftEarly:
    """(After this process stopped leading.) Withdraw an unanswered cancel; the state."""
    if ctrl_c.withdraw is not None:
        ctrl_c.withdraw()
    state = str(read_status(spool, job_id).get("state", ""))
    ended = spool.job(job_id).final.exists()
    return LeftEarly(state if ended else "")


async def _lead_until_done(
    leader: Leader, job_id: str, say: Callable[[str], None] | None
) -> FinalState:
    """Lead the job, or wait while a leader daemon of the same spool leads it.

    On a spool of its own, ``prsd run`` takes the lease at once (no earlier leader, or
    it is known dead on this host). Where a daemon holds the lease, this process
    serves the job as one more node, and takes over only if that leader's lease lapses.
    """
    election = leader.election
    final_path = leader.spool.job(job_id).final
    patient = False
    while True:
        if await anyio.to_thread.run_sync(final_path.exists):
            return FinalState.from_json(read_final(leader.spool.job(job_id), MAX_FINAL_BYTES))
        epoch = await anyio.to_thread.run_sync(
            partial(election.try_once, anyio.current_time(), patient=patient)
        )
        if not patient and not epoch and say is not None:
            say(
                "another leader holds this spool's lease: the job waits for it (a leader "
                "daemon leads it; a second `prsd run` takes over when the first ends)"
            )
        patient = True
        if epoch:
            try:
                final = await leader.lead(until_job=job_id)
            except Deposed:
                leader.drivers.clear()
                continue
            assert final is not None
            return final
        await anyio.sleep(election.beat_s / 2)


async def _report_progress(
    spool: SpoolLayout, job_id: str, show: Callable[[dict[str, Any]], None]
) -> None:
    """The job's status document, read from the spool (whoever leads), at once and then
    every PROGRESS_EVERY_S."""
    while True:
        show(await anyio.to_thread.run_sync(read_status, spool, job_id))
        await anyio.sleep(PROGRESS_EVERY_S)
