"""The leader's book of every mini-batch: attempts, failures, final states, counts.

Pure and compact: one small array slot per mini-batch (a million mini-batches cost
a few megabytes), no I/O, no clock. The I/O shell feeds it planned mini-batches and
attempt outcomes and acts on the :class:`~prsd.leader.run.nextstep.Step` it returns.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

from prsd.leader.run.nextstep import Step, next_step
from prsd.leader.run.verdict import Counts
from prsd.wire.records import REQUEUED, SUCCEEDED, Outcome

UNPLANNED, IN_FLIGHT, DONE_OK, DONE_FAILED = 0, 1, 2, 3


@dataclass
class _Totals:
    succeeded_mbs: int = 0
    failed_mbs: int = 0
    partial_mbs: int = 0
    items: int = 0
    succeeded_items: int = 0
    failed_items: int = 0
    attempts: int = 0
    requeues: int = 0


class Ledger:
    """Per-mini-batch state, indexed by mini-batch id."""

    def __init__(self, max_retries: int) -> None:
        self.max_retries = max_retries
        self._state = bytearray()
        self._attempt = array("H")
        self._failures = array("B")
        self._items = array("q")
        self._totals = _Totals()
        self.total_mbs: int | None = None  # set when the split has finished

    def __len__(self) -> int:
        return len(self._state)

    def plan(self, index: int, items: int, attempt: int = 1) -> None:
        """Record a planned mini-batch (indices arrive in order, from 0)."""
        if index != len(self._state):
            raise ValueError(f"mini-batch {index} planned out of order (expected {len(self)})")
        self._state.append(IN_FLIGHT)
        self._attempt.append(attempt)
        self._failures.append(0)
        self._items.append(max(items, 0))

    def attempt(self, index: int) -> int:
        return self._attempt[index]

    def failures(self, index: int) -> int:
        return self._failures[index]

    def is_final(self, index: int) -> bool:
        return self._state[index] in (DONE_OK, DONE_FAILED)

    def succeeded(self, index: int) -> bool:
        return self._state[index] == DONE_OK

    def record(self, outcome: Outcome) -> Step:
        """Apply one attempt's outcome; the caller has checked it is the current attempt."""
        i = outcome.index
        if self.is_final(i):
            raise ValueError(f"mini-batch {i} is already final")
        t = self._totals
        t.attempts += 1
        if outcome.status == REQUEUED:
            t.requeues += 1
        step = next_step(outcome.status, self._failures[i], self.max_retries)
        self._failures[i] = min(step.failures, 255)
        if step.retry:
            self._attempt[i] += 1
            return step
        items = outcome.items if outcome.items > 0 else self._items[i]
        self._items[i] = items
        t.items += items
        if step.succeeded:
            self._state[i] = DONE_OK
            ok = min(outcome.succeeded_items, items)
            t.succeeded_mbs += 1
            t.succeeded_items += ok
            if ok < items:
                t.partial_mbs += 1
                t.failed_items += items - ok
        else:
            self._state[i] = DONE_FAILED
            t.failed_mbs += 1
            t.failed_items += items
        return step

    def record_succeeded(self, outcomes: list[Outcome]) -> None:
        """Apply a run of succeeded outcomes of live attempts (one committed task):
        the same counts as :meth:`record` of each, without a step per mini-batch.

        Raises:
            ValueError: an outcome is not succeeded, or its mini-batch is already final.
        """
        t = self._totals
        state, items_of = self._state, self._items
        for outcome in outcomes:  # checked whole first: nothing is applied on an error
            i = outcome.index
            if outcome.status != SUCCEEDED or state[i] in (DONE_OK, DONE_FAILED):
                raise ValueError(f"mini-batch {i}: not a succeeded live attempt")
        for outcome in outcomes:
            i = outcome.index
            items = outcome.items if outcome.items > 0 else items_of[i]
            items_of[i] = items
            state[i] = DONE_OK
            ok = min(outcome.succeeded_items, items)
            t.items += items
            t.succeeded_items += ok
            if ok < items:
                t.partial_mbs += 1
                t.failed_items += items - ok
        t.attempts += len(outcomes)
        t.succeeded_mbs += len(outcomes)

    def requeue(self, index: int) -> Step:
        """A claimed attempt that never ran (node lost, handed back): run it again."""
        return self.record(Outcome(index=index, status=REQUEUED))

    def planned_items(self) -> int:
        """Items of every planned mini-batch (tables: rows seen so far)."""
        return sum(self._items)

    def counts(self) -> Counts:
        t = self._totals
        return Counts(
            total_mbs=self.total_mbs,
            succeeded_mbs=t.succeeded_mbs,
            failed_mbs=t.failed_mbs,
            partial_mbs=t.partial_mbs,
            items=t.items,
            succeeded_items=t.succeeded_items,
            failed_items=t.failed_items,
        )

    @property
    def attempts(self) -> int:
        return self._totals.attempts

    @property
    def requeues(self) -> int:
        return self._totals.requeues

    def all_final(self) -> bool:
        """Split finished and every mini-batch is final."""
        return self.total_mbs is not None and (
            self._totals.succeeded_mbs + self._totals.failed_mbs == self.total_mbs
        )
