"""What an alternative runner is asked to do: one JSON file, the same for every runner."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.split import Unit, chunks, csv_units, list_files, parquet_units


@dataclass(frozen=True)
class Plan:
    """One run of one workload by one alternative runner.

    Attributes:
        script: the entry script (its folder goes on ``sys.path``).
        input_kind: ``files``, ``csv`` or ``parquet``.
        input_path: the input folder (files) or table file.
        mini_batch_size: files per mini-batch, or bytes per mini-batch for a CSV.
        workers: worker processes.
        output: the file the runner writes, in mini-batch order.
    """

    script: str
    input_kind: str
    input_path: str
    mini_batch_size: int
    workers: int
    output: str

    def dump(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=1), encoding="utf-8")

    @classmethod
    def load(cls, path: str) -> Plan:
        return cls(**json.loads(Path(path).read_text(encoding="utf-8")))

    def units(self) -> list[Unit]:
        """The mini-batches, listed or split now (inside the timed run)."""
        if self.input_kind == "files":
            return list(chunks(list_files(self.input_path), self.mini_batch_size))
        if self.input_kind == "csv":
            return csv_units(self.input_path, self.mini_batch_size)
        if self.input_kind == "parquet":
            return parquet_units(self.input_path)
        raise ValueError(f"unknown input kind {self.input_kind!r}")
