"""Check the many-models job's output against the true series.

Reads the append_row file (``<store> <brand> <weeks> <slope> <intercept> "<forecast>"``
per line) and ``data/truth.csv``; checks one line per (store, brand) in order of first
appearance in the input, every group complete (all weeks), and each fitted slope
within ``--tolerance`` of the true one. Prints one line; exits 1 on any mismatch.

Usage: python examples/many_models/check.py [OUTPUT] [--tolerance 3.0]

Without OUTPUT, the newest ``jobs/many-models*/outputs/models.txt`` in the spool is
checked (``$PRSD_SPOOL``, else ``spool/`` at the repository root).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
COLUMNS = ["store", "brand", "weeks", "slope", "intercept", "forecast"]


def newest_output() -> Path:
    spool = Path(os.environ.get("PRSD_SPOOL") or REPO / "spool")
    found = list(spool.glob("jobs/many-models*/outputs/models.txt"))
    if not found:
        sys.exit(f"no jobs/many-models*/outputs/models.txt under {spool}; run the job first")
    return max(found, key=lambda p: p.stat().st_mtime)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", nargs="?", type=Path)
    parser.add_argument("--data", type=Path, default=HERE / "data")
    parser.add_argument("--tolerance", type=float, default=3.0)
    args = parser.parse_args(argv)
    output = args.output or newest_output()
    truth = pd.read_csv(args.data / "truth.csv")
    weeks = json.loads((args.data / "prepared.json").read_text())["weeks"]
    got = pd.read_csv(output, sep=" ", header=None, names=COLUMNS)
    keys = list(zip(got["store"], got["brand"], strict=True))
    expected = list(zip(truth["store"], truth["brand"], strict=True))
    if keys != expected:
        print(f"many_models: {len(keys)} groups, expected {len(expected)} in input order")
        return 1
    if not (got["weeks"] == weeks).all():
        print(f"many_models: some group lacks rows (expected {weeks} weeks each)")
        return 1
    worst = float((got["slope"] - truth["slope"]).abs().max())
    print(f"many_models: {len(got)} models, every group complete, slope error <= {worst:.2f}")
    return 0 if worst <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
