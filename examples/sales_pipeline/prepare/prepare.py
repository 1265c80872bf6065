"""Write weekly sales, one CSV per store and brand under <out>/<store>/<brand>/, and an MLTable.

Each series is a straight line with noise (seeded, so every run writes the same
bytes); the true slope of each series goes to <out>/truth.json for the check.
"""

from __future__ import annotations

import argparse
import json
import os
import random

BRANDS = ("dominicks", "minute.maid", "tropicana")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stores", type=int, required=True)
    parser.add_argument("--weeks", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    rng = random.Random(42)
    truth = {}
    for s in range(args.stores):
        store = str(1000 + s)
        for brand in BRANDS:
            slope, base = rng.uniform(-20, 20), rng.uniform(8000, 12000)
            truth[f"{store}/{brand}"] = slope
            folder = os.path.join(args.out, store, brand)
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, "sales.csv"), "w", encoding="utf-8") as f:
                f.write("store,brand,week,quantity\n")
                for week in range(args.weeks):
                    quantity = base + slope * week + rng.gauss(0, 30)
                    f.write(f"{store},{brand},{week},{quantity:.1f}\n")
    table = (
        "type: mltable\n"
        "paths:\n"
        "  - pattern: ./**/*.csv\n"
        "transformations:\n"
        "  - read_delimited:\n"
        "      delimiter: ','\n"
        "      encoding: utf8\n"
        "      header: all_files_same_headers\n"
    )
    with open(os.path.join(args.out, "MLTable"), "w", encoding="utf-8") as f:
        f.write(table)
    with open(os.path.join(args.out, "truth.json"), "w", encoding="utf-8") as f:
        json.dump(truth, f, indent=1)
    print(f"wrote {len(truth)} series of {args.weeks} weeks to {args.out}")


if __name__ == "__main__":
    main()
