"""W5's prsd variants on a tiny input: ``prsd run`` with its fork server, without it
(``prsd-run-spawn``), and handing its job to running daemons (``prsd-run-warm``); each
output complete and identical to the sequential runner's, the first ``run()`` after
intake measured. No timing is asserted."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from bench.cases import build_cases
from bench.execute import run_once
from bench.stats import check_outputs

if TYPE_CHECKING:
    from pathlib import Path

RUNNERS = ("prsd-run", "prsd-run-spawn", "prsd-run-warm", "sequential")


@pytest.fixture(autouse=True)
def _data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_DATA", str(tmp_path / "data"))


def test_w5_prsd_variants_run_and_agree(tmp_path: Path) -> None:
    (case,), _sizes = build_cases("tiny", ("W5",), RUNNERS)
    samples = [run_once(case, runner, tmp_path / "work", 0) for runner in case.runners]
    check_outputs(samples, case.items, "sequential")
    by_runner = {s.runner: s for s in samples}
    assert all(s.ok for s in samples), [(s.runner, s.status, s.note) for s in samples]
    for runner in ("prsd-run", "prsd-run-spawn", "prsd-run-warm"):
        after = by_runner[runner].after_intake_s
        assert after is not None and after >= 0, (runner, after)
    assert by_runner["sequential"].after_intake_s is None
