"""``Dataset.File`` / ``Dataset.Tabular`` factories over datastore folders and local paths."""

from __future__ import annotations

from typing import Any

from azureml._prsd.datapaths import sources
from azureml._prsd.unsupported import Surface
from azureml.data import FileDataset, TabularDataset


class _FileFactory(Surface):
    @staticmethod
    def from_files(path: Any, validate: bool = True, partition_format: str | None = None,
                   is_file: bool = False) -> FileDataset:  # fmt: skip
        ds = FileDataset(sources(path), partition_format)
        if validate and not ds._files():
            raise ValueError(f"no file matches {path!r}")
        return ds


class _TabularFactory(Surface):
    @staticmethod
    def from_delimited_files(path: Any, validate: bool = True, include_path: bool = False,
                             infer_column_types: bool = True, set_column_types: Any = None,
                             separator: str = ",", header: Any = True, partition_format: str | None = None,
                             support_multi_line: bool = False, empty_as_string: bool = False,
                             encoding: str = "utf8") -> TabularDataset:  # fmt: skip
        options = {"separator": separator, "header": bool(header)}
        return _checked(
            TabularDataset(sources(path), "csv", options, partition_format), validate, path
        )

    @staticmethod
    def from_parquet_files(path: Any, validate: bool = True, include_path: bool = False,
                           set_column_types: Any = None, partition_format: str | None = None) -> TabularDataset:  # fmt: skip
        return _checked(
            TabularDataset(sources(path), "parquet", {}, partition_format), validate, path
        )

    @staticmethod
    def from_json_lines_files(path: Any, validate: bool = True, include_path: bool = False,
                              set_column_types: Any = None, partition_format: str | None = None,
                              invalid_lines: str = "error", encoding: str = "utf8") -> TabularDataset:  # fmt: skip
        return _checked(
            TabularDataset(sources(path), "jsonl", {}, partition_format), validate, path
        )


def _checked(ds: TabularDataset, validate: bool, path: Any) -> TabularDataset:
    if validate and not ds._files():
        raise ValueError(f"no file matches {path!r}")
    return ds


class Dataset(Surface):
    """Azure's dataset factories: ``Dataset.File`` and ``Dataset.Tabular``."""

    File = _FileFactory
    Tabular = _TabularFactory
