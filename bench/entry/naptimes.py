"""W9's nap with a record: ``run()`` sleeps ``BENCH_NAP_S`` (20 ms) per mini-batch, like
nap.py, and keeps the wall time of its start and end and the mini-batch's first item;
``shutdown()`` writes them to ``BENCH_MARK_DIR/times-<pid>.txt`` (bench/w9timeline.py
reads them): a first line ``# <import time> <init time>``, then one line per call,
``<start> <end> <first item's name>``."""

from __future__ import annotations

import os
import time

NAP_S = float(os.environ.get("BENCH_NAP_S", "0.02"))
IMPORTED = time.time()
_init: list[float] = []
_calls: list[tuple[float, float, str]] = []


def init() -> None:
    _init.append(time.time())


def run(mini_batch: list[str]) -> list[str]:
    start = time.time()
    time.sleep(NAP_S)
    _calls.append((start, time.time(), os.path.basename(mini_batch[0]) if mini_batch else ""))
    return [os.path.basename(p) for p in mini_batch]


def shutdown() -> None:
    folder = os.environ.get("BENCH_MARK_DIR")
    if not folder:
        return
    lines = [f"# {IMPORTED!r} {(_init[0] if _init else IMPORTED)!r}"]
    lines += [f"{a!r} {b!r} {name}" for a, b, name in _calls]
    with open(os.path.join(folder, f"times-{os.getpid()}.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
