"""``Workspace``: there is no Azure workspace behind a prsd job; say what to use instead."""

from __future__ import annotations

from typing import Any

WHY = (
    "prsd runs jobs without Azure: there is no workspace. Read data from the job's "
    "inputs (input_data, side_inputs), models with Model.get_model_path, secrets with "
    "Run.get_context().get_secret (see docs/azureml-core.md)"
)


class Workspace:
    """Raises on every use that needs the service."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(f"azureml.core.Workspace: {WHY}")

    @classmethod
    def from_config(cls, *args: Any, **kwargs: Any) -> Workspace:
        raise RuntimeError(f"Workspace.from_config: {WHY}")

    @classmethod
    def get(cls, *args: Any, **kwargs: Any) -> Workspace:
        raise RuntimeError(f"Workspace.get: {WHY}")
