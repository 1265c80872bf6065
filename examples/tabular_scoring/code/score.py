"""Score wines: a classifier fitted in init(), one prediction per row in run()."""

from __future__ import annotations

import pandas as pd
from sklearn.datasets import load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from azureml_user.parallel_run import EntryScript

model = None
features: list[str] = []


def init() -> None:
    """Fit the model once per worker process, on scikit-learn's original wine table."""
    global model, features
    wine = load_wine(as_frame=True)
    features = list(wine.data.columns)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    model.fit(wine.data, wine.target)
    EntryScript().logger.info("init: fitted on %d wines", len(wine.data))


def run(mini_batch: pd.DataFrame) -> pd.DataFrame:
    """One row per input row: its id, the predicted cultivar and its probability."""
    proba = model.predict_proba(mini_batch[features])
    return pd.DataFrame(
        {
            "id": mini_batch["id"],
            "cultivar": proba.argmax(axis=1),
            "probability": proba.max(axis=1).round(4),
        }
    )
