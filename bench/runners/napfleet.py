"""W9's alternatives: the same 20 ms sleep per mini-batch on ``slots`` single-thread
workers of Dask (``LocalCluster`` + ``client.map``) or Ray (``slots`` actors).

``python -m bench.runners.napfleet dask|ray SLOTS COUNT NAP_S OUT.json``. The cluster is
started and warmed (every worker has run one call) before the clock starts, as prsd's
daemons are already running when W9 submits: the figure is the dispatch of ``COUNT``
calls until the last result is back. CPU is read from ``/proc`` (psutil) for this
process (client and, for Dask, the scheduler) and for the whole process tree.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from typing import Any

from bench.cpu import tree_cpu_s


def nap(i: int, nap_s: float) -> int:
    time.sleep(nap_s)
    return i


class Napper:
    """A Ray actor: one per slot."""

    def nap(self, i: int, nap_s: float) -> int:
        time.sleep(nap_s)
        return i


def _dask(slots: int, count: int, nap_s: float) -> dict[str, Any]:
    distributed: Any = importlib.import_module("distributed")
    cluster = distributed.LocalCluster(
        n_workers=slots,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=40,
    )
    client = distributed.Client(cluster)
    try:
        client.wait_for_workers(slots)
        client.gather(client.map(nap, range(slots * 2), nap_s=0.0, pure=False))
        return _timed(lambda: client.gather(client.map(nap, range(count), nap_s=nap_s, pure=False)))
    finally:
        client.close()
        cluster.close()


def _ray(slots: int, count: int, nap_s: float) -> dict[str, Any]:
    ray: Any = importlib.import_module("ray")
    ray.init(num_cpus=slots, include_dashboard=False, log_to_driver=False)
    try:
        actor = ray.remote(num_cpus=1)(Napper)
        actors = [actor.remote() for _ in range(slots)]
        ray.get([a.nap.remote(0, 0.0) for a in actors])

        def go() -> list[int]:
            refs = [actors[i % slots].nap.remote(i, nap_s) for i in range(count)]
            return list(ray.get(refs))

        return _timed(go)
    finally:
        ray.shutdown()


def _timed(work: Any) -> dict[str, Any]:
    own0, tree0 = tree_cpu_s([], own_only=True), tree_cpu_s([])
    start = time.perf_counter()
    results = work()
    wall = time.perf_counter() - start
    own1, tree1 = tree_cpu_s([], own_only=True), tree_cpu_s([])
    return {
        "wall_s": wall,
        "results": len(results),
        "distinct": len(set(results)),
        "driver_cpu_s": own1 - own0,
        "tree_cpu_s": tree1 - tree0,
    }


def main(argv: list[str]) -> int:
    system, slots, count, nap_s, out = argv[0], int(argv[1]), int(argv[2]), float(argv[3]), argv[4]
    run = {"dask": _dask, "ray": _ray}[system]
    doc = run(slots, count, nap_s)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
