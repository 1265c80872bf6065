"""Write the tabular scoring example's data: scikit-learn's wine table, enlarged.

scikit-learn's bundled ``load_wine()`` table (178 wines, 13 measurements, 3 cultivars)
is resampled with noise to ``--rows`` rows (default 2,000,000: about 200 MB of CSV),
always the same for the same arguments:

- ``data/table/part-<NN>.csv``: the rows to score, ``id`` plus the 13 measurements, in
  ``--files`` files (the job's input; ids run 0.. across the files in order);
- ``data/labels.npy``: the true cultivar of every row, by id; only ``check.py`` reads it.

Idempotent: an existing data folder written with the same arguments is left alone.

Usage: python examples/tabular_scoring/prepare.py [--rows N] [--files N] [--data DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import load_wine

HERE = Path(__file__).resolve().parent
SEED = 0
NOISE = 0.3  # noise, as a fraction of each measurement's standard deviation


def enlarged(rows: int) -> tuple[pd.DataFrame, np.ndarray]:
    """``rows`` wines drawn from load_wine() with a little Gaussian noise on each value."""
    wine = load_wine(as_frame=True)
    features: pd.DataFrame = wine.data
    rng = np.random.default_rng(SEED)
    picks = rng.integers(0, len(features), rows)
    values = features.to_numpy()[picks]
    values = values + rng.normal(0.0, NOISE, values.shape) * features.std().to_numpy()
    frame = pd.DataFrame(values.round(4), columns=features.columns)
    frame.insert(0, "id", np.arange(rows))
    return frame, wine.target.to_numpy()[picks].astype(np.int8)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--data", type=Path, default=HERE / "data")
    args = parser.parse_args(argv)
    stamp = {"rows": args.rows, "files": args.files, "seed": SEED, "noise": NOISE}
    marker = args.data / "prepared.json"
    if marker.exists() and json.loads(marker.read_text()) == stamp:
        print(f"tabular_scoring: {args.data} is up to date")
        return 0
    started = time.monotonic()
    shutil.rmtree(args.data, ignore_errors=True)
    (args.data / "table").mkdir(parents=True)
    frame, labels = enlarged(args.rows)
    for n, part in enumerate(np.array_split(np.arange(args.rows), args.files)):
        frame.iloc[part].to_csv(args.data / "table" / f"part-{n:02d}.csv", index=False)
    np.save(args.data / "labels.npy", labels)
    marker.write_text(json.dumps(stamp))
    size_mb = sum(p.stat().st_size for p in (args.data / "table").iterdir()) / 2**20
    print(
        f"tabular_scoring: {args.rows} rows in {args.files} CSV files ({size_mb:.0f} MB) "
        f"in {time.monotonic() - started:.1f}s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
