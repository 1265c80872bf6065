"""A worker's life as a pure state machine: ``transition(state, event) -> Transition``.

::

    STARTING --ready--> IDLE --task--> BUSY --task done--> IDLE
       |                 |  \\           |  \\
       |                 |   retire      |   stop (job ended)
       |                 |     \\         |     \\
       |                 |      STOPPING <-------- (any live state, on stop)
       |                 |         |
       |  init failed,   | exited  | exited
       |  init timeout,  v         v
       +-- exited -----> DEAD      RETIRED
                     (run timeout, crash, OOM: from BUSY too)

DEAD is a worker that failed (init, a crash, a timeout kill): its slot starts a
replacement while the node still may. RETIRED is a worker that ended because it
was asked to (no more work, the job ended). Both are final: any later event is
ignored. An event a live state does not expect is a bug in the shell and raises.

The node's give-up rule of the init rules (stop replacing after
``3 * max_concurrency_per_instance`` init failures in a row: supervisor's BACKOFF
-> FATAL) is :func:`may_replace_after_init_failures`, written once here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any


class WorkerState(Enum):
    STARTING = "starting"  # spawned; import and init() running
    IDLE = "idle"  # init() done; waiting for a task
    BUSY = "busy"  # running a task's mini-batches
    STOPPING = "stopping"  # asked to end (shutdown frame, or the stop ladder)
    DEAD = "dead"  # failed: init, crash, OOM, timeout kill (final; replaced)
    RETIRED = "retired"  # ended as asked (final; not replaced)


class Event(Enum):
    READY = "ready"  # init() returned
    INIT_FAILED = "init failed"  # init() or the import raised
    INIT_TIMED_OUT = "init timed out"  # init() past 3 x timeout + 30 s
    TASK = "task"  # a task was handed over
    TASK_DONE = "task done"  # every mini-batch of the task has an outcome
    RUN_TIMED_OUT = "run timed out"  # run() or loading a mini-batch past its timeout
    EXITED = "exited"  # the process ended (reaped) without prsd stopping it
    RETIRE = "retire"  # no more work: ask for shutdown() and an orderly exit
    STOP = "stop"  # the job ended or the node stops: the stop ladder now


class Action(Enum):
    DUMP_STACKS = "dump stacks"  # SIGUSR1: faulthandler into user/error/<node>/<process>.txt
    STOP_LADDER = "stop ladder"  # SIGTERM to the group, grace, SIGKILL, reap
    SEND_SHUTDOWN = "send shutdown"  # the shutdown frame: shutdown() then exit 0
    FAIL_BATCH = "fail batch"  # the running mini-batch gets a failed outcome
    COUNT_INIT_FAILURE = "count init failure"  # for the node and job init rules
    RECORD_EXIT = "record exit"  # return code, signal name, sent by prsd: _main.txt
    REPLACE = "replace"  # the slot may start a new worker


@dataclass(frozen=True)
class Transition:
    state: WorkerState
    actions: tuple[Action, ...] = ()


class InvalidTransition(ValueError):
    """An event the worker's state does not allow (a bug in the supervisor)."""

    def __init__(self, state: WorkerState, event: Event) -> None:
        super().__init__(f"event {event.value!r} is not valid in state {state.value!r}")
        self.state = state
        self.event = event


S, E, A = WorkerState, Event, Action
_KILLED = (A.STOP_LADDER, A.RECORD_EXIT)

_TABLE: dict[tuple[WorkerState, Event], Transition] = {
    (S.STARTING, E.READY): Transition(S.IDLE),
    (S.STARTING, E.INIT_FAILED): Transition(S.DEAD, (*_KILLED, A.COUNT_INIT_FAILURE, A.REPLACE)),
    (S.STARTING, E.INIT_TIMED_OUT): Transition(
        S.DEAD, (A.DUMP_STACKS, *_KILLED, A.COUNT_INIT_FAILURE, A.REPLACE)
    ),
    (S.STARTING, E.EXITED): Transition(S.DEAD, (*_KILLED, A.COUNT_INIT_FAILURE, A.REPLACE)),
    (S.STARTING, E.STOP): Transition(S.STOPPING, (A.STOP_LADDER,)),
    (S.IDLE, E.TASK): Transition(S.BUSY),
    (S.IDLE, E.RETIRE): Transition(S.STOPPING, (A.SEND_SHUTDOWN,)),
    (S.IDLE, E.STOP): Transition(S.STOPPING, (A.STOP_LADDER,)),
    (S.IDLE, E.EXITED): Transition(S.DEAD, (*_KILLED, A.REPLACE)),
    (S.BUSY, E.TASK_DONE): Transition(S.IDLE),
    (S.BUSY, E.RUN_TIMED_OUT): Transition(
        S.DEAD, (A.DUMP_STACKS, *_KILLED, A.FAIL_BATCH, A.REPLACE)
    ),
    (S.BUSY, E.EXITED): Transition(S.DEAD, (*_KILLED, A.FAIL_BATCH, A.REPLACE)),
    (S.BUSY, E.STOP): Transition(S.STOPPING, (A.STOP_LADDER,)),
    (S.STOPPING, E.STOP): Transition(S.STOPPING, (A.STOP_LADDER,)),
    (S.STOPPING, E.EXITED): Transition(S.RETIRED, _KILLED),
}
FINAL = frozenset({S.DEAD, S.RETIRED})


def transition(state: WorkerState, event: Event) -> Transition:
    """The next state and what the supervisor must do, in that order.

    ``STOP_LADDER`` after ``EXITED`` only reaps (and kills the group's stragglers):
    the ladder sends no signal to a process that has already ended.

    Raises:
        InvalidTransition: ``event`` cannot happen in ``state``.
    """
    if state in FINAL:
        return Transition(state)
    found = _TABLE.get((state, event))
    if found is None:
        raise InvalidTransition(state, event)
    return found


def may_replace_after_init_failures(failures_in_row: int, workers: int) -> bool:
    """The node's init rule: a node stops replacing after ``3 * workers`` init failures in a row."""
    return failures_in_row < 3 * max(workers, 1)


@dataclass(frozen=True)
class PoolStatistics:
    """One job's workers on one node at a moment (the node report and the heartbeat)."""

    workers: int  # the worker count the node aims for (max_concurrency_per_instance)
    starting: int = 0
    idle: int = 0
    busy: int = 0
    stopping: int = 0
    init_successes: int = 0
    init_failures: int = 0
    init_failures_in_row: int = 0
    init_timeouts: int = 0
    gave_up: bool = False

    @classmethod
    def count(cls, workers: int, states: list[WorkerState], **init: Any) -> PoolStatistics:
        """Count live workers by state; ``init`` carries the init counters."""
        return cls(
            workers,
            states.count(S.STARTING),
            states.count(S.IDLE),
            states.count(S.BUSY),
            states.count(S.STOPPING),
            **init,
        )
