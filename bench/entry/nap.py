"""W9: ``run()`` sleeps ``BENCH_NAP_S`` (20 ms) per mini-batch and uses no CPU, so the
workers are never the bottleneck and the figure is the coordination around them."""

from __future__ import annotations

import os
import time

from _marks import first_run

NAP_S = float(os.environ.get("BENCH_NAP_S", "0.02"))


def init() -> None:
    pass


def run(mini_batch: list[str]) -> list[str]:
    first_run()
    time.sleep(NAP_S)
    return [os.path.basename(p) for p in mini_batch]
