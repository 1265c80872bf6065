"""dask: ``distributed.LocalCluster`` with one thread per worker process, ``client.map``
over the mini-batches, ``init()`` cached per worker process."""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

from bench.plan import Plan
from bench.script import load, run_unit

if TYPE_CHECKING:
    from types import ModuleType

    from bench.split import Unit

_modules: dict[str, ModuleType] = {}


def work(unit: Unit, script: str) -> bytes:
    """One mini-batch in a Dask worker (the script is loaded once per process)."""
    module = _modules.get(script)
    if module is None:
        module = _modules[script] = load(script)
    return run_unit(module, unit)


def main(plan_path: str) -> int:
    plan = Plan.load(plan_path)
    distributed: Any = importlib.import_module("distributed")
    cluster = distributed.LocalCluster(
        n_workers=plan.workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=40,
    )
    client = distributed.Client(cluster)
    try:
        units = plan.units()
        futures = client.map(work, units, script=plan.script, pure=False)
        results = client.gather(futures)
        with open(plan.output, "wb") as out:
            out.writelines(results)
    finally:
        client.close()
        cluster.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
