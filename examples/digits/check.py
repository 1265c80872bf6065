"""Check the digits job's output against the labels.

Reads the append_row file (``<file name>: <digit>`` per line) and ``labels.csv``, and
checks that there is exactly one line per image, in input order (sorted file names),
and that the accuracy is at least ``--min-accuracy``. Prints one line, e.g.
``digits: 899 predictions, in input order, accuracy 0.967``; exits 1 on any mismatch.

Usage: python examples/digits/check.py [OUTPUT] [--labels CSV] [--min-accuracy 0.9]

Without OUTPUT, the newest ``jobs/*/outputs/predictions.txt`` in the spool is checked
(``$PRSD_SPOOL``, else ``spool/`` at the repository root).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
OUTPUT_NAME = "predictions.txt"


class CheckError(Exception):
    """The output does not match the labels."""


def newest_output() -> Path:
    spool = Path(os.environ.get("PRSD_SPOOL") or REPO / "spool")
    found = list(spool.glob(f"jobs/*/outputs/{OUTPUT_NAME}"))
    if not found:
        raise CheckError(f"no jobs/*/outputs/{OUTPUT_NAME} under {spool}; run the job first")
    return max(found, key=lambda p: p.stat().st_mtime)


def read_labels(path: Path) -> list[tuple[str, int]]:
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise CheckError(f"{path} lists no images; run prepare.py")
    labels = [(row["file"], int(row["label"])) for row in rows]
    # prsd (like Azure) hands a files input over in sorted path order.
    return sorted(labels)


def read_predictions(path: Path) -> list[tuple[str, str]]:
    predictions = []
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            name, sep, digit = line.rstrip("\n").rpartition(": ")
            if not sep:
                raise CheckError(f"{path}:{number}: not '<file>: <digit>': {line.rstrip()!r}")
            predictions.append((name, digit))
    return predictions


def check(output: Path, labels_csv: Path, min_accuracy: float) -> str:
    labels = read_labels(labels_csv)
    predictions = read_predictions(output)
    if len(predictions) != len(labels):
        raise CheckError(f"{output}: {len(predictions)} lines for {len(labels)} images")
    correct = 0
    for number, ((name, digit), (want_name, label)) in enumerate(
        zip(predictions, labels, strict=True), 1
    ):
        if name != want_name:
            raise CheckError(f"{output}:{number}: {name!r} where input order puts {want_name!r}")
        correct += digit == str(label)
    accuracy = correct / len(labels)
    summary = f"{len(labels)} predictions, in input order, accuracy {accuracy:.3f}"
    if accuracy < min_accuracy:
        raise CheckError(f"{summary}, below {min_accuracy}")
    return f"digits: {summary}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path, nargs="?", help="the job's predictions.txt")
    parser.add_argument("--labels", type=Path, default=HERE / "data" / "labels.csv")
    parser.add_argument("--min-accuracy", type=float, default=0.9)
    args = parser.parse_args(argv)
    try:
        output = args.output or newest_output()
        print(check(output, args.labels, args.min_accuracy))
    except (CheckError, OSError, KeyError, ValueError) as exc:
        print(f"digits: check failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
