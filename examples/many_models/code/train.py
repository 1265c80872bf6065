"""Fit one linear trend per (store, brand) group; return one row per group."""

from __future__ import annotations

import argparse

import pandas as pd
from sklearn.linear_model import LinearRegression

from azureml_user.parallel_run import EntryScript

args = argparse.Namespace()


def init() -> None:
    """Read the arguments once per worker (parse_known_args: prsd's are there too)."""
    global args
    parser = argparse.ArgumentParser()
    parser.add_argument("--target_column", default="quantity")
    parser.add_argument("--horizon", type=int, default=4)
    args, _ = parser.parse_known_args()


def run(mini_batch: pd.DataFrame, mini_batch_context: object) -> pd.DataFrame:
    """One group's rows in, one row out: its keys, the fitted trend and a forecast."""
    key = mini_batch.attrs["partition_key_value"]  # {"store": "1000", "brand": "..."}
    weeks = mini_batch[["week"]].to_numpy()
    model = LinearRegression().fit(weeks, mini_batch[args.target_column])
    last = int(weeks.max())
    future = pd.DataFrame({"week": range(last + 1, last + 1 + args.horizon)})
    forecast = model.predict(future.to_numpy())
    EntryScript().logger.info("trained %s on %d weeks", key, len(mini_batch))
    return pd.DataFrame(
        {
            "store": [key["store"]],
            "brand": [key["brand"]],
            "weeks": [len(mini_batch)],
            "slope": [round(float(model.coef_[0]), 3)],
            "intercept": [round(float(model.intercept_), 1)],
            "forecast": [" ".join(str(round(v)) for v in forecast)],
        }
    )
