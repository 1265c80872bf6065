"""One least-squares line per (store, brand) group, and a forecast ``--horizon`` weeks ahead."""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import pandas as pd

horizon = 0


def init() -> None:
    global horizon
    parser = argparse.ArgumentParser()
    parser.add_argument("--horizon", type=int, default=4)
    args, _ = parser.parse_known_args()
    horizon = args.horizon


def run(mini_batch: pd.DataFrame, mini_batch_context: Any) -> pd.DataFrame:
    key = mini_batch_context.partition_key_value
    weeks = mini_batch["week"].to_numpy(dtype=float)
    quantity = mini_batch["quantity"].to_numpy(dtype=float)
    slope, intercept = np.polyfit(weeks, quantity, 1)
    ahead = weeks.max() + horizon
    return pd.DataFrame(
        [
            {
                "store": key["store"],
                "brand": key["brand"],
                "weeks": len(weeks),
                "slope": round(float(slope), 3),
                "forecast": round(float(intercept + slope * ahead), 1),
            }
        ]
    )
