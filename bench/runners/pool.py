"""pool: ``multiprocessing.Pool`` with an initializer that calls ``init()``; ordered ``imap``."""

from __future__ import annotations

import multiprocessing
import sys
from typing import TYPE_CHECKING

from bench.plan import Plan
from bench.script import load, run_unit

if TYPE_CHECKING:
    from types import ModuleType

    from bench.split import Unit

_module: ModuleType | None = None


def _init(script: str) -> None:
    global _module
    _module = load(script)


def _work(unit: Unit) -> bytes:
    assert _module is not None
    return run_unit(_module, unit)


def main(plan_path: str) -> int:
    plan = Plan.load(plan_path)
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(plan.workers, initializer=_init, initargs=(plan.script,)) as pool:
        units = plan.units()
        with open(plan.output, "wb") as out:
            out.writelines(pool.imap(_work, units, chunksize=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
