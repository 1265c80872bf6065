"""Reading a submitted pipeline back from the spool: states in Azure's words, new log lines.

Guarantees: :func:`azure_status` maps prsd's step and pipeline states to v1 run
statuses (``NotStarted``, ``Queued``, ``Running``, ``Finished``, ``Failed``,
``Canceled``); :class:`Tail` returns only the lines appended to a step's progress
files since it last looked, whole lines only. Nothing here writes to the spool.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

_STATUS = {
    "Waiting": "NotStarted",
    "Queued": "Queued",
    "Running": "Running",
    "Completed": "Finished",
    "Completed with failures": "Finished",
    "Failed": "Failed",
    "Canceled": "Canceled",
    "Lost": "Failed",
    "Skipped": "NotStarted",
}
ENDED = frozenset({"Finished", "Failed", "Canceled"})


def azure_status(prsd_state: str) -> str:
    """A v1 run status for a prsd state (unknown states read as ``Running``)."""
    return _STATUS.get(prsd_state, "Running")


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object file, or None while it is absent or half-written."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


class Tail:
    """New whole lines of the files matching a glob in one folder."""

    def __init__(self, folder: Path, pattern: str) -> None:
        self.folder = folder
        self.pattern = pattern
        self.offsets: dict[Path, int] = {}

    def new_lines(self) -> list[str]:
        out: list[str] = []
        for path in sorted(self.folder.glob(self.pattern)) if self.folder.is_dir() else []:
            start = self.offsets.get(path, 0)
            try:
                with path.open("rb") as f:
                    f.seek(start)
                    chunk = f.read()
            except OSError:
                continue
            end = chunk.rfind(b"\n") + 1
            self.offsets[path] = start + end
            out.extend(chunk[:end].decode("utf-8", "replace").splitlines())
        return out
