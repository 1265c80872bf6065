"""Check the tabular scoring job's output against the labels.

Reads the append_row file (``<id> <cultivar> <probability>`` per line, pandas'
``to_csv(sep=" ", header=False, index=False)``) and ``data/labels.npy``, checks one
line per input row with ids in input order, and an accuracy of at least
``--min-accuracy``. Prints one line; exits 1 on any mismatch.

Usage: python examples/tabular_scoring/check.py [OUTPUT] [--min-accuracy 0.9]

Without OUTPUT, the newest ``jobs/*/outputs/predictions.txt`` in the spool is checked
(``$PRSD_SPOOL``, else ``spool/`` at the repository root).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def newest_output() -> Path:
    spool = Path(os.environ.get("PRSD_SPOOL") or REPO / "spool")
    found = list(spool.glob("jobs/wine-scoring*/outputs/predictions.txt"))
    if not found:
        sys.exit(f"no jobs/wine-scoring*/outputs/predictions.txt under {spool}; run the job first")
    return max(found, key=lambda p: p.stat().st_mtime)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", nargs="?", type=Path)
    parser.add_argument("--labels", type=Path, default=HERE / "data" / "labels.npy")
    parser.add_argument("--min-accuracy", type=float, default=0.9)
    args = parser.parse_args(argv)
    output = args.output or newest_output()
    labels = np.load(args.labels)
    got = pd.read_csv(output, sep=" ", header=None, names=["id", "cultivar", "probability"])
    if len(got) != len(labels) or not (got["id"].to_numpy() == np.arange(len(labels))).all():
        print(f"tabular_scoring: {len(got)} lines, expected ids 0..{len(labels) - 1} in order")
        return 1
    accuracy = float((got["cultivar"].to_numpy() == labels).mean())
    print(f"tabular_scoring: {len(got)} predictions, in input order, accuracy {accuracy:.3f}")
    return 0 if accuracy >= args.min_accuracy else 1


if __name__ == "__main__":
    sys.exit(main())
