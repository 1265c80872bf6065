"""Medians, rates and paired ratios over the samples of one harness run: pure functions."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from bench.cases import Case
    from bench.execute import Sample


def alternation(runners: Sequence[str], repeat: int) -> list[str]:
    """The runner order of one repeat: every runner once, the start rotated per repeat."""
    k = repeat % len(runners) if runners else 0
    return [*runners[k:], *runners[:k]]


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def paired_ratio(samples: Sequence[Sample], base: str, other: str) -> float | None:
    """Median over repeats of base wall / other wall, both runs ok in the same repeat."""
    walls: dict[tuple[str, int], float] = {
        (s.runner, s.repeat): s.wall_s for s in samples if s.ok and s.wall_s
    }
    ratios = [
        walls[(base, r)] / walls[(other, r)]
        for (runner, r) in walls
        if runner == other and (base, r) in walls
    ]
    return median(ratios)


@dataclass
class Row:
    """The summary of one runner on one case."""

    workload: str
    variant: str
    runner: str
    status: str
    runs: int
    wall_s: float | None
    items_per_s: float | None
    mbs_per_s: float | None
    us_per_mb: float | None
    first_run_s: float | None
    tree_rss_mb: float | None
    prsd_rss_mb: float | None
    ratio_run: float | None  # prsd-run wall / this runner's
    ratio_daemons: float | None  # prsd-daemons wall / this runner's
    note: str
    after_intake_s: float | None = None  # prsd: first run() after the job was taken in


def summarize(case: Case, samples: Sequence[Sample]) -> list[Row]:
    """One row per runner of ``case`` (samples of other cases are ignored)."""
    mine = [s for s in samples if (s.workload, s.variant) == (case.workload, case.variant)]
    rows = []
    for runner in case.runners:
        runs = [s for s in mine if s.runner == runner]
        good = [s for s in runs if s.ok]
        wall = median([s.wall_s for s in good if s.wall_s is not None])
        first = median([s.first_run_s for s in good if s.first_run_s is not None])
        tree = max((s.tree_rss_mb for s in good if s.tree_rss_mb), default=None)
        own = max((s.prsd_rss_mb for s in good if s.prsd_rss_mb), default=None)
        bad = [s for s in runs if not s.ok]
        status = "ok" if good and not bad else (bad[0].status if bad else "not run")
        rows.append(
            Row(
                case.workload,
                case.variant,
                runner,
                status,
                len(good),
                wall,
                case.items / wall if wall else None,
                case.mini_batches / wall if wall else None,
                wall / case.mini_batches * 1e6 if wall else None,
                first,
                tree,
                own,
                paired_ratio(mine, "prsd-run", runner),
                paired_ratio(mine, "prsd-daemons", runner),
                bad[0].note if bad else "",
                median([s.after_intake_s for s in good if s.after_intake_s is not None]),
            )
        )
    return rows


def check_outputs(samples: list[Sample], expected_lines: int, reference: str) -> None:
    """Mark every ok sample whose output is incomplete or differs from ``reference``'s."""
    ref = next((s.output_sha256 for s in samples if s.ok and s.runner == reference), None)
    if ref is None:
        ref = next((s.output_sha256 for s in samples if s.ok), None)
    for s in samples:
        if not s.ok:
            continue
        if s.output_lines != expected_lines:
            s.status = "mismatch"
            s.note = f"{s.output_lines} output lines, {expected_lines} expected"
        elif s.output_sha256 != ref:
            s.status = "mismatch"
            s.note = f"output differs from {reference}'s"
