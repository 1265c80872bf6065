"""sequential: one process, ``init()`` once, ``run()`` over each mini-batch."""

from __future__ import annotations

import sys

from bench.plan import Plan
from bench.script import load, run_unit


def main(plan_path: str) -> int:
    plan = Plan.load(plan_path)
    module = load(plan.script)
    with open(plan.output, "wb") as out:
        out.writelines(run_unit(module, unit) for unit in plan.units())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
