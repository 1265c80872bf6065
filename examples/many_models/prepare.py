"""Write the many-models example's data: weekly sales of orange juice per store and brand.

A generated table in the shape of Azure's many-models solution accelerator (the
Dominick's orange juice data): ``--stores`` stores x 3 brands x ``--weeks`` weeks, each
series a straight line with noise, ``quantity = base + slope * week + noise``.
Always the same for the same arguments:

- ``data/sales/weeks-<NNN>.csv``: ``store,brand,week,quantity,price``, one file per
  26 weeks, so every (store, brand) group is spread over several files;
- ``data/truth.csv``: ``store,brand,slope,base`` of every series; only ``check.py``
  reads it.

Idempotent: an existing data folder written with the same arguments is left alone.

Usage: python examples/many_models/prepare.py [--stores N] [--weeks N] [--data DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
SEED = 0
BRANDS = ("dominicks", "minute.maid", "tropicana")
WEEKS_PER_FILE = 26


def series(stores: int) -> pd.DataFrame:
    """The true line of every (store, brand)."""
    rng = np.random.default_rng(SEED)
    keys = [(1000 + s, b) for s in range(stores) for b in BRANDS]
    return pd.DataFrame(
        {
            "store": [k[0] for k in keys],
            "brand": [k[1] for k in keys],
            "slope": rng.uniform(-20, 40, len(keys)).round(2),
            "base": rng.uniform(5000, 20000, len(keys)).round(0),
        }
    )


def sales(truth: pd.DataFrame, weeks: int) -> pd.DataFrame:
    """Week by week, every series' quantity (noise: 2% of the base)."""
    rng = np.random.default_rng(SEED + 1)
    week = np.repeat(np.arange(1, weeks + 1), len(truth))
    line = np.tile(truth.index.to_numpy(), weeks)
    base, slope = truth["base"].to_numpy()[line], truth["slope"].to_numpy()[line]
    noise = rng.normal(0, 0.02 * base)
    return pd.DataFrame(
        {
            "store": truth["store"].to_numpy()[line],
            "brand": truth["brand"].to_numpy()[line],
            "week": week,
            "quantity": np.rint(base + slope * week + noise).astype(int),
            "price": rng.uniform(1.5, 3.5, len(week)).round(2),
        }
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", type=int, default=100)
    parser.add_argument("--weeks", type=int, default=156)
    parser.add_argument("--data", type=Path, default=HERE / "data")
    args = parser.parse_args(argv)
    stamp = {"stores": args.stores, "weeks": args.weeks, "seed": SEED}
    marker = args.data / "prepared.json"
    if marker.exists() and json.loads(marker.read_text()) == stamp:
        print(f"many_models: {args.data} is up to date")
        return 0
    shutil.rmtree(args.data, ignore_errors=True)
    (args.data / "sales").mkdir(parents=True)
    truth = series(args.stores)
    table = sales(truth, args.weeks)
    for first in range(1, args.weeks + 1, WEEKS_PER_FILE):
        part = table[(table["week"] >= first) & (table["week"] < first + WEEKS_PER_FILE)]
        part.to_csv(args.data / "sales" / f"weeks-{first:03d}.csv", index=False)
    truth.to_csv(args.data / "truth.csv", index=False)
    marker.write_text(json.dumps(stamp))
    print(f"many_models: {len(truth)} series, {len(table)} rows in {args.data / 'sales'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
