"""Loading an entry script and running one mini-batch unit through it, as the alternatives do.

Every alternative runner calls :func:`load` once per worker process (that calls
``init()``) and :func:`run_unit` per mini-batch; the result comes back as the bytes
prsd's append_row file would hold for that mini-batch.
"""

from __future__ import annotations

import importlib.util
import io
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import ModuleType

    from bench.split import Unit


def load(script: str) -> ModuleType:
    """Import the entry script (its folder on ``sys.path``) and call its ``init()``."""
    folder = script.rsplit("/", 1)[0]
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location("bench_entry_script", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    init = getattr(module, "init", None)
    if init is not None:
        init()
    return module


def read_unit(unit: Unit) -> Any:
    """What ``run()`` receives for a unit: a list of paths or a DataFrame."""
    if isinstance(unit, list) and unit and unit[0] == "csv":
        import pandas as pd

        _, path, start, end = unit
        with open(path, "rb") as f:
            header = f.readline()
            f.seek(start)
            body = f.read(end - start)
        return pd.read_csv(io.BytesIO(header + body))
    if isinstance(unit, list) and unit and unit[0] == "parquet":
        import pyarrow.parquet as pq

        _, path, group = unit
        return pq.ParquetFile(path).read_row_group(group).to_pandas()
    return unit


def render(result: Any) -> bytes:
    """The append_row bytes of one ``run()`` result (docs/jobspec.md, "Outputs")."""
    if isinstance(result, (list, tuple)):
        return "".join(f"{x}\n" for x in result).encode()
    to_csv = getattr(result, "to_csv", None)
    if to_csv is None:
        raise TypeError(f"run() returned {type(result).__name__}, not a list or DataFrame")
    text: str = to_csv(sep=" ", header=False, index=False)
    return text.encode()


def run_unit(module: ModuleType, unit: Unit) -> bytes:
    """Run one mini-batch through the loaded script; its output bytes."""
    return render(module.run(read_unit(unit)))
