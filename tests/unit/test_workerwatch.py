"""The grid a worker's watch ticks on (pure)."""

from __future__ import annotations

import pytest

from prsd.agent.workerwatch import until_tick


@pytest.mark.parametrize("phase", [0.0, 0.25, 0.99])
@pytest.mark.parametrize("now", [0.0, 0.01, 0.2, 12345.678, 1e6 + 0.123])
def test_the_next_wake_is_on_the_grid_within_one_tick(now: float, phase: float) -> None:
    tick = 0.2
    wait = until_tick(now, tick, phase)
    assert 0 < wait <= tick + 1e-9
    at = (now + wait) / tick - phase  # a whole number of ticks
    assert abs(at - round(at)) < 1e-6, (now, phase, wait)


def test_two_watches_of_one_process_wake_together() -> None:
    """Started at different instants, they meet on the same grid point."""
    a, b = 10.03, 10.09
    assert a + until_tick(a, 0.2, 0.5) == pytest.approx(b + until_tick(b, 0.2, 0.5))


def test_processes_with_other_phases_wake_apart() -> None:
    now = 50.0
    assert now + until_tick(now, 0.2, 0.1) != pytest.approx(now + until_tick(now, 0.2, 0.6))
