"""``Dataset``: registered datasets live in Azure; a prsd job reads its inputs in place."""

from __future__ import annotations

from typing import Any

WHY = (
    "prsd has no dataset registry. Pass the data as the job's input_data (run() gets "
    "its mini-batches) or as a side input (side_inputs: {{name: ./folder}}; its path "
    "arrives in program_arguments), and read the files directly (see docs/azureml-core.md)"
)


class Dataset:
    """Raises a clear error on every lookup."""

    @staticmethod
    def get_by_name(workspace: Any = None, name: str = "", version: Any = "latest") -> Any:
        raise LookupError(f"Dataset.get_by_name({name!r}): " + WHY.format())

    @staticmethod
    def get_by_id(workspace: Any = None, id: str = "") -> Any:
        raise LookupError(f"Dataset.get_by_id({id!r}): " + WHY.format())

    class File:
        @staticmethod
        def from_files(*args: Any, **kwargs: Any) -> Any:
            raise LookupError("Dataset.File.from_files: " + WHY.format())

    class Tabular:
        @staticmethod
        def from_delimited_files(*args: Any, **kwargs: Any) -> Any:
            raise LookupError("Dataset.Tabular.from_delimited_files: " + WHY.format())
