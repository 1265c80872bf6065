"""W3: read each file, return ``name: length``."""

from __future__ import annotations

import os

from _marks import first_run


def init() -> None:
    pass


def run(mini_batch: list[str]) -> list[str]:
    first_run()
    out = []
    for p in mini_batch:
        with open(p, "rb") as f:
            data = f.read()
        out.append(f"{os.path.basename(p)}: {len(data)}")
    return out
