"""``FileDataset``, ``TabularDataset`` and their step forms: lazy descriptions of local files.

Guarantees: a dataset holds only its sources (folder + glob), format and options; files
are listed when asked (``to_path``, ``to_pandas_dataframe``, submission). As a step
input a file dataset is its folder (with ``partition_format`` made relative to it), a
tabular dataset the folder of an ``MLTable`` file written beside its data (Azure's own
format). ``partition_by`` groups a table locally with pandas and writes one Parquet
file per group under the target. Everything else raises the named error.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from azureml._prsd.datapaths import Source, format_keys, format_regex, relative_format, sources
from azureml._prsd.unsupported import Surface, module_getattr

if TYPE_CHECKING:
    import pandas as pd

MLTABLE = "MLTable"
_READERS = {"csv": "read_delimited", "parquet": "read_parquet", "jsonl": "read_json_lines"}


class AbstractDataset(Surface):
    """What file and tabular datasets share: sources, a name, consumption configs."""

    def __init__(self, srcs: list[Source], partition_format: str | None = None) -> None:
        self._sources = srcs
        self._partition_format = partition_format
        self.name: str | None = None
        self.id = uuid.uuid4().hex

    @property
    def partition_keys(self) -> list[str]:
        return format_keys(self._partition_format)

    def as_named_input(self, name: str) -> DatasetConsumptionConfig:
        return DatasetConsumptionConfig(name, self)

    def _files(self) -> list[Path]:
        return [f for s in self._sources for f in s.files()]

    def _one_source(self, what: str) -> Source:
        if len(self._sources) != 1:
            raise ValueError(
                f"{what} reads one folder or glob; this dataset has {len(self._sources)}"
            )
        return self._sources[0]


class FileDataset(AbstractDataset):
    """Files under a folder, optionally with values in their paths (``partition_format``)."""

    def to_path(self) -> list[str]:
        """The files' paths, each relative to its source folder with a leading ``/``."""
        return ["/" + f.relative_to(s.folder).as_posix() for s in self._sources for f in s.files()]

    def download(
        self,
        target_path: str | None = None,
        overwrite: bool = False,
        ignore_not_found: bool = False,
    ) -> list[str]:
        target = Path(target_path or ".")
        out = []
        for s in self._sources:
            for f in s.files():
                dest = target / f.relative_to(s.folder)
                if dest.exists() and not overwrite:
                    raise FileExistsError(f"{dest} exists; pass overwrite=True")
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, dest)
                out.append(str(dest))
        return out

    def prsd_input(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """(the step's input entry, settings for the step such as ``partition_format``)."""
        src = self._one_source("a file dataset given to a step")
        extra: dict[str, Any] = {}
        if src.pattern != "**" and len(src.files()) == 1 and not self._partition_format:
            return {"type": "uri_file", "path": str(src.files()[0])}, extra  # one file
        if self._partition_format:
            extra["partition_format"] = relative_format(self._partition_format, src)
        elif src.pattern != "**" and src.files() != Source(src.folder, "**", src.root).files():
            raise ValueError(
                f"a step input must be a whole folder: {src.pattern!r} selects part of "
                f"{src.folder} (move the files into their own folder, or give a partition_format)"
            )
        return {"type": "uri_folder", "path": str(src.folder)}, extra


class TabularDataset(AbstractDataset):
    """Delimited, Parquet or JSON lines files read as one table."""

    def __init__(self, srcs: list[Source], fmt: str, options: dict[str, Any] | None = None,
                 partition_format: str | None = None, keys: list[str] | None = None) -> None:  # fmt: skip
        super().__init__(srcs, partition_format)
        self._format = fmt
        self._options = dict(options or {})
        self._keys = keys

    @property
    def partition_keys(self) -> list[str]:
        return list(self._keys) if self._keys is not None else format_keys(self._partition_format)

    def to_pandas_dataframe(
        self, on_error: str = "null", out_of_range_datetime: str = "null"
    ) -> pd.DataFrame:
        import pandas as pd

        frames = [self._with_keys(self._read(f), s, f) for s in self._sources for f in s.files()]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def _with_keys(self, df: pd.DataFrame, src: Source, path: Path) -> pd.DataFrame:
        """Azure's partition columns: values read from the path by ``partition_format``."""
        if not self._partition_format or self._keys is not None:
            return df  # partition_by's files hold their key columns
        fmt = relative_format(self._partition_format, src)
        found = format_regex(fmt).match(path.relative_to(src.folder).as_posix())
        if found is None:
            raise ValueError(f"{path} does not match partition_format {self._partition_format!r}")
        return df.assign(**found.groupdict())

    def _read(self, path: Path) -> pd.DataFrame:
        import pandas as pd

        if self._format == "parquet":
            return pd.read_parquet(path)
        if self._format == "jsonl":
            return pd.read_json(path, lines=True)
        header = 0 if self._options.get("header", True) else None
        return pd.read_csv(path, sep=self._options.get("separator", ","), header=header)

    def partition_by(self, partition_keys: list[str], target: Any, name: str | None = None,
                     show_progress: bool = True, partition_as_file_dataset: bool = False) -> TabularDataset:  # fmt: skip
        """Write one Parquet file per key combination under ``target``; the partitioned table."""
        if partition_as_file_dataset:
            from azureml._prsd.unsupported import unsupported

            unsupported("TabularDataset.partition_by(partition_as_file_dataset=True)")
        (dest_src,) = sources(target)
        folder = (
            dest_src.folder
            / (dest_src.pattern if dest_src.pattern != "**" else "")
            / uuid.uuid4().hex
        )
        df = self.to_pandas_dataframe()
        missing = [k for k in partition_keys if k not in df.columns]
        if missing:
            raise ValueError(
                f"partition keys {missing} are not columns of the table ({list(df.columns)})"
            )
        # Azure's partitioned table shows the key columns last (they come from the paths).
        df = df[[c for c in df.columns if c not in partition_keys] + list(partition_keys)]
        for values, group in df.groupby(partition_keys, sort=False, dropna=False):
            parts = [
                str(v).replace("/", "%2F")
                for v in (values if isinstance(values, tuple) else (values,))
            ]
            out = folder.joinpath(*parts)
            out.mkdir(parents=True, exist_ok=True)
            group.to_parquet(out / "part-00000.parquet", index=False)
        fmt = "/".join("{" + k + "}" for k in partition_keys) + "/part-00000.parquet"
        result = TabularDataset([Source(folder, "**/*.parquet", dest_src.root)], "parquet",
                                partition_format=fmt, keys=list(partition_keys))  # fmt: skip
        result.name = name
        write_mltable(folder, "**/*.parquet", "parquet", {})
        if show_progress:
            print(f"Partitioned {len(df)} rows by {partition_keys} into {folder}")
        return result

    def prsd_input(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """(the step's input entry: an MLTable folder, no extra settings)."""
        src = self._one_source("a tabular dataset given to a step")
        fmt = None  # partition_by's files hold their key columns; others take them from paths
        if self._partition_format and self._keys is None:
            fmt = relative_format(self._partition_format, src)
        pattern = src.pattern if src.pattern != "**" else "**/*"
        write_mltable(src.folder, pattern, self._format, self._options, fmt)
        return {"type": "mltable", "path": str(src.folder)}, {}


def write_mltable(
    folder: Path,
    pattern: str,
    fmt: str,
    options: dict[str, Any],
    partition_format: str | None = None,
) -> None:
    """An ``MLTable`` file naming the table's files; an existing different one is an error.

    A ``partition_format`` becomes Azure's ``extract_columns_from_partition_format``
    transformation, so the key columns come from the paths as ``to_pandas_dataframe`` gives them.
    """
    reader: Any = _READERS[fmt]
    if fmt == "csv":
        header = "all_files_same_headers" if options.get("header", True) else "no_header"
        reader = {"read_delimited": {"delimiter": options.get("separator", ","), "header": header}}
    steps: list[Any] = [reader]
    if partition_format:
        steps.append(
            {"extract_columns_from_partition_format": {"partition_format": partition_format}}
        )
    text = yaml.safe_dump(
        {"paths": [{"pattern": "./" + pattern}], "transformations": steps}, sort_keys=False
    )
    path = folder / MLTABLE
    if path.exists():
        if path.read_text(encoding="utf-8") == text:
            return
        raise ValueError(
            f"{path} already describes another table; move the data into its own folder"
        )
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


class DatasetConsumptionConfig(Surface):
    """``dataset.as_named_input(name)``: a step input under that name. ``dataset`` may be
    a ``PipelineParameter`` whose value is a dataset (given per submission)."""

    def __init__(self, name: str, dataset: Any, mode: str = "direct") -> None:
        self.name = name
        self.dataset = dataset
        self.mode = mode

    def as_mount(self, path_on_compute: str | None = None) -> DatasetConsumptionConfig:
        return DatasetConsumptionConfig(self.name, self.dataset, "mount")

    def as_download(self, path_on_compute: str | None = None) -> DatasetConsumptionConfig:
        return DatasetConsumptionConfig(self.name, self.dataset, "download")


class OutputFileDatasetConfig(Surface):
    """A step's output folder, like ``PipelineData`` (``destination`` is not used)."""

    def __init__(self, name: str | None = None, destination: Any = None, source: str | None = None,
                 partition_format: str | None = None) -> None:  # fmt: skip
        self.name = name or f"output_{uuid.uuid4().hex[:8]}"
        self.destination = destination

    @property
    def datastore_name(self) -> str:
        """The destination's datastore (``destination=(datastore, path)``), else the default's name."""
        dest = self.destination
        store = dest[0] if isinstance(dest, tuple) and dest else None
        return str(getattr(store, "name", "workspaceblobstore"))

    def as_input(self, name: str | None = None) -> OutputFileDatasetConfig:
        return self

    def as_mount(self) -> OutputFileDatasetConfig:
        return self

    def read_delimited_files(self, *args: Any, **kwargs: Any) -> OutputFileDatasetConfig:
        return self


__getattr__ = module_getattr("azureml.data")
