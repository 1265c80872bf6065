"""Fit one least-squares model on lagged quantities per (Store, Brand) group.

numpy only (pandas gives the DataFrame), so it runs without scikit-learn.
"""

import argparse
import json
import os
from typing import Any

import numpy as np
import pandas as pd

args = argparse.Namespace()


def init() -> None:
    global args
    parser = argparse.ArgumentParser()
    for name in ("--drop_cols", "--target_col", "--date_col", "--lagging_orders", "--model_folder"):
        parser.add_argument(name)
    args, _ = parser.parse_known_args()


def run(input_data: pd.DataFrame, mini_batch_context: Any) -> list[Any]:
    if not isinstance(input_data, pd.DataFrame):
        raise TypeError("Not a valid DataFrame input.")
    key = mini_batch_context.partition_key_value
    frame = input_data.copy()
    frame[args.date_col] = pd.to_datetime(frame[args.date_col])
    frame = frame.set_index(args.date_col).sort_index()
    frame = frame.drop(columns=args.drop_cols.split(","), errors="ignore")
    lags = [int(i) for i in args.lagging_orders.split(",")]
    for lag in lags:
        frame[f"lag_{lag}"] = frame[args.target_col].shift(lag)
    frame = frame.dropna()
    features = frame.drop(columns=[args.target_col]).to_numpy(dtype=float)
    design = np.column_stack([np.ones(len(features)), features])
    coef, *_ = np.linalg.lstsq(design, frame[args.target_col].to_numpy(dtype=float), rcond=None)
    folder = os.path.join(args.model_folder, *[str(v) for v in key.values()])
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "model.json"), "w") as f:
        json.dump({"key": key, "rows": len(frame), "coef": coef.tolist()}, f)
    return []
