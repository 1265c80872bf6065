"""W2: about 1 ms of pure-Python CPU per item (BENCH_SPIN loop iterations)."""

from __future__ import annotations

import os

from _marks import first_run

SPIN = int(os.environ.get("BENCH_SPIN", "20000"))


def init() -> None:
    pass


def _work(seed: int) -> int:
    acc = seed
    for i in range(SPIN):
        acc = (acc * 31 + i) & 0xFFFFFFFF
    return acc


def run(mini_batch: list[str]) -> list[str]:
    first_run()
    out = []
    for p in mini_batch:
        name = os.path.basename(p)
        out.append(f"{name}: {_work(len(name))}")
    return out
