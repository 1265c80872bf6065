"""ray: Ray Data ``map_batches`` with an actor pool whose constructor calls ``init()``.

Files become a dataset of paths (``from_items``) cut into batches of the mini-batch
size; tables are read by Ray Data itself (``read_csv`` / ``read_parquet``) and cut into
batches of the rows that make about one mini-batch. Order is preserved.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from bench.plan import Plan
from bench.script import load, render


class ScriptActor:
    """One actor per worker: loads the entry script (``init()``) once."""

    def __init__(self, script: str, kind: str) -> None:
        self.module = load(script)
        self.kind = kind

    def __call__(self, batch: Any) -> dict[str, list[bytes]]:
        data = [str(p) for p in batch["path"]] if self.kind == "files" else batch
        return {"out": [render(self.module.run(data))]}


def _rows_per_batch(plan: Plan) -> int:
    """Rows that make about ``mini_batch_size`` bytes (CSV) or one row group (Parquet)."""
    if plan.input_kind == "parquet":
        import pyarrow.parquet as pq

        meta = pq.ParquetFile(plan.input_path).metadata
        return max(1, meta.num_rows // max(1, meta.num_row_groups))
    with open(plan.input_path, "rb") as f:
        f.readline()
        sample = f.read(plan.mini_batch_size)
    return max(1, sample.count(b"\n"))


def main(plan_path: str) -> int:
    plan = Plan.load(plan_path)
    ray: Any = importlib.import_module("ray")
    ray_data: Any = importlib.import_module("ray.data")
    # One logical CPU more than the actors hold: Ray Data's read tasks are budgeted on it
    # (with exactly the actors' CPUs a read_csv pipeline never starts).
    ray.init(
        num_cpus=plan.workers + 1,
        include_dashboard=False,
        log_to_driver=False,
        logging_level="ERROR",
    )
    try:
        ctx = ray_data.DataContext.get_current()
        ctx.execution_options.preserve_order = True
        ctx.enable_progress_bars = False
        read_args = {"num_cpus": 0.5}
        if plan.input_kind == "files":
            paths = [p for unit in plan.units() for p in unit]
            ds = ray_data.from_items([{"path": p} for p in paths])
            batch_size, fmt = plan.mini_batch_size, "numpy"
        elif plan.input_kind == "csv":
            ds = ray_data.read_csv(plan.input_path, **read_args)
            batch_size, fmt = _rows_per_batch(plan), "pandas"
        else:
            ds = ray_data.read_parquet(plan.input_path, **read_args)
            batch_size, fmt = _rows_per_batch(plan), "pandas"
        ds = ds.map_batches(
            ScriptActor,
            fn_constructor_args=(plan.script, plan.input_kind),
            batch_size=batch_size,
            batch_format=fmt,
            compute=ray_data.ActorPoolStrategy(size=plan.workers),
            num_cpus=1,
        )
        with open(plan.output, "wb") as out:
            out.writelines(row["out"] for row in ds.iter_rows())
    finally:
        ray.shutdown()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("RAY_DATA_DISABLE_PROGRESS_BARS", "1")
    sys.exit(main(sys.argv[1]))
