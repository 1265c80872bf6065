"""The worker state machine: every transition, the final states, the node's give-up rule."""

from __future__ import annotations

import pytest

from prsd.agent.workerstate import (
    Action,
    Event,
    InvalidTransition,
    PoolStatistics,
    WorkerState,
    may_replace_after_init_failures,
    transition,
)

S, E, A = WorkerState, Event, Action

CASES = [
    (S.STARTING, E.READY, S.IDLE, ()),
    (
        S.STARTING,
        E.INIT_FAILED,
        S.DEAD,
        (A.STOP_LADDER, A.RECORD_EXIT, A.COUNT_INIT_FAILURE, A.REPLACE),
    ),
    (
        S.STARTING,
        E.INIT_TIMED_OUT,
        S.DEAD,
        (A.DUMP_STACKS, A.STOP_LADDER, A.RECORD_EXIT, A.COUNT_INIT_FAILURE, A.REPLACE),
    ),
    (
        S.STARTING,
        E.EXITED,
        S.DEAD,
        (A.STOP_LADDER, A.RECORD_EXIT, A.COUNT_INIT_FAILURE, A.REPLACE),
    ),
    (S.STARTING, E.STOP, S.STOPPING, (A.STOP_LADDER,)),
    (S.IDLE, E.TASK, S.BUSY, ()),
    (S.IDLE, E.RETIRE, S.STOPPING, (A.SEND_SHUTDOWN,)),
    (S.IDLE, E.STOP, S.STOPPING, (A.STOP_LADDER,)),
    (S.IDLE, E.EXITED, S.DEAD, (A.STOP_LADDER, A.RECORD_EXIT, A.REPLACE)),
    (S.BUSY, E.TASK_DONE, S.IDLE, ()),
    (
        S.BUSY,
        E.RUN_TIMED_OUT,
        S.DEAD,
        (A.DUMP_STACKS, A.STOP_LADDER, A.RECORD_EXIT, A.FAIL_BATCH, A.REPLACE),
    ),
    (S.BUSY, E.EXITED, S.DEAD, (A.STOP_LADDER, A.RECORD_EXIT, A.FAIL_BATCH, A.REPLACE)),
    (S.BUSY, E.STOP, S.STOPPING, (A.STOP_LADDER,)),
    (S.STOPPING, E.STOP, S.STOPPING, (A.STOP_LADDER,)),
    (S.STOPPING, E.EXITED, S.RETIRED, (A.STOP_LADDER, A.RECORD_EXIT)),
]


@pytest.mark.parametrize(("state", "event", "after", "actions"), CASES)
def test_transition(
    state: WorkerState, event: Event, after: WorkerState, actions: tuple[Action, ...]
) -> None:
    """Each allowed event leads to its state, with its actions in order."""
    step = transition(state, event)
    assert step.state is after
    assert step.actions == actions


ALLOWED = {(state, event) for state, event, _, _ in CASES}
LIVE = [s for s in S if s not in (S.DEAD, S.RETIRED)]


@pytest.mark.parametrize(
    ("state", "event"), [(s, e) for s in LIVE for e in E if (s, e) not in ALLOWED]
)
def test_unexpected_event_raises(state: WorkerState, event: Event) -> None:
    """An event a live state does not expect is a supervisor bug, named in the error."""
    with pytest.raises(InvalidTransition, match=event.value):
        transition(state, event)


@pytest.mark.parametrize("state", [S.DEAD, S.RETIRED])
@pytest.mark.parametrize("event", list(E))
def test_final_states_absorb_every_event(state: WorkerState, event: Event) -> None:
    """DEAD and RETIRED are final: later events change nothing and do nothing."""
    step = transition(state, event)
    assert step.state is state
    assert step.actions == ()


@pytest.mark.parametrize("state", LIVE)
def test_every_live_state_can_die_or_be_stopped(state: WorkerState) -> None:
    """A process can end, and prsd can stop it, whatever the worker was doing."""
    assert transition(state, E.EXITED).state in (S.DEAD, S.RETIRED)
    assert A.STOP_LADDER in transition(state, E.STOP).actions


def test_failures_are_replaced_and_orderly_ends_are_not() -> None:
    """DEAD (a failure) asks for a replacement; RETIRED never does."""
    for state, event, after, actions in CASES:
        assert (A.REPLACE in actions) == (after is S.DEAD), (state, event)


def test_stacks_are_dumped_before_the_ladder() -> None:
    """The faulthandler dump must come while the process still lives."""
    for state, event, _, actions in CASES:
        if A.DUMP_STACKS in actions:
            assert actions.index(A.DUMP_STACKS) < actions.index(A.STOP_LADDER), (state, event)


@pytest.mark.parametrize(
    ("in_row", "workers", "replace"),
    [(0, 1, True), (2, 1, True), (3, 1, False), (5, 2, True), (6, 2, False), (11, 4, True)],
)
def test_node_gives_up_after_three_times_workers_in_a_row(
    in_row: int, workers: int, replace: bool
) -> None:
    """The node's init rule: a node stops replacing after 3 x max_concurrency init failures in a row."""
    assert may_replace_after_init_failures(in_row, workers) is replace


def test_pool_statistics_count_live_states() -> None:
    """The pool's statistics count workers by live state and carry the init counters."""
    stats = PoolStatistics.count(
        4, [S.BUSY, S.IDLE, S.BUSY, S.STARTING, S.DEAD], init_failures=2, gave_up=False
    )
    assert (stats.workers, stats.starting, stats.idle, stats.busy, stats.stopping) == (
        4,
        1,
        1,
        2,
        0,
    )
    assert stats.init_failures == 2 and stats.init_successes == 0
