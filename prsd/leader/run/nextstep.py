"""What happens after an attempt: a pure decision per mini-batch outcome."""

from __future__ import annotations

from dataclasses import dataclass

from prsd.wire.records import REQUEUED, SUCCEEDED


@dataclass(frozen=True)
class Step:
    """The decision for one mini-batch after one attempt.

    Attributes:
        final: the mini-batch is finished (succeeded or failed for good).
        succeeded: with ``final``: it succeeded.
        retry: run it again in a new attempt.
        failures: failures counted against ``max_retries`` so far.
    """

    final: bool
    succeeded: bool
    retry: bool
    failures: int


def next_step(status: str, failures: int, max_retries: int) -> Step:
    """Decide from an attempt's status and the failures before it.

    A requeued attempt (node lost, work handed back, never run) is retried without
    using up a retry: it was not the mini-batch's fault.
    """
    if status == SUCCEEDED:
        return Step(True, True, False, failures)
    if status == REQUEUED:
        return Step(False, False, True, failures)
    failures += 1
    if failures <= max_retries:
        return Step(False, False, True, failures)
    return Step(True, False, False, failures)
