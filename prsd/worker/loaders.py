"""From a mini-batch's payload to what ``run()`` receives, by input kind.

``LOADERS`` maps an input kind (the ``kind`` of the hello frame) to the function
that loads it, named as ``"module:function"`` and imported on first use: the tabular
loaders need pandas/pyarrow, and a files job must run under an interpreter that has
neither. To add a kind, add a row (for example ``"csv": "prsd.worker.tabular:load_csv"``)
and write the function in its own module; it gets the :class:`MiniBatchRef` and the
job's resolved settings (the hello's ``config``), returns the mini-batch object
(``len()`` of it is the item count) and, for a DataFrame, sets
``attrs["partition_key_value"]`` from ``ref.key``.

Standard library only, Python 3.7 syntax.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from prsd.wire.records import MiniBatch

if TYPE_CHECKING:
    from collections.abc import Callable

LOADERS: dict[str, str] = {
    "files": "prsd.worker.loaders:load_files",
    "csv": "prsd.worker.tabular:load_csv",
    "jsonl": "prsd.worker.tabular:load_jsonl",
    "parquet": "prsd.worker.tabular:load_parquet",
}

PRELOADS: dict[str, tuple[str, ...]] = {
    "csv": ("pandas",),
    "jsonl": ("pandas",),
    "parquet": ("pandas", "pyarrow.parquet"),
}
"""The modules a kind's loader imports on its first mini-batch (pandas alone takes 0.4 s
here). A fork server asked to preload them (``prsd.worker.forkserver``) imports them
once, so the workers it forks start with them."""

_loaded: dict[str, Callable[[MiniBatchRef, dict[str, Any]], Any]] = {}


def preloads_for(kind: str) -> tuple[str, ...]:
    """The modules to preload for input ``kind`` (none for files, or a kind unknown)."""
    return PRELOADS.get(kind, ())


class UnknownInputKind(Exception):
    """No loader is registered for the job's input kind."""


MiniBatchRef = MiniBatch  # a mini-batch as a ``run`` frame carries it (prsd.wire.records)


class MiniBatchContext:
    """The second argument of ``run(mini_batch, mini_batch_context)`` (Azure's names).

    Attributes:
        partition_key_value: the mini-batch's partition key values (a dict), or None
            when the job has no ``partition_keys``.
        minibatch_index: the mini-batch's index in input order.
        dataset: always None (Azure's v1 sub-dataset; prsd has no datasets).
    """

    def __init__(self, ref: MiniBatchRef) -> None:
        self.partition_key_value = dict(ref.key) if ref.key is not None else None
        self.minibatch_index = ref.index
        self.dataset = None

    def __repr__(self) -> str:
        return (
            f"MiniBatchContext(minibatch_index={self.minibatch_index}, "
            f"partition_key_value={self.partition_key_value!r})"
        )


def load_mini_batch(kind: str, ref: MiniBatchRef, config: dict[str, Any]) -> Any:
    """What ``run()`` receives for this mini-batch.

    Raises:
        UnknownInputKind: no loader for ``kind``.
        Exception: whatever the loader raises (unreadable input, bad payload).
    """
    return _loader(kind)(ref, config)


def _loader(kind: str) -> Callable[[MiniBatchRef, dict[str, Any]], Any]:
    loader = _loaded.get(kind)
    if loader is None:
        target = LOADERS.get(kind)
        if target is None:
            known = ", ".join(sorted(LOADERS))
            raise UnknownInputKind(
                f"this worker has no loader for input kind {kind!r} (it knows: {known})"
            )
        module_name, _, attr = target.partition(":")
        loader = getattr(importlib.import_module(module_name), attr)
        _loaded[kind] = loader
    return loader


def load_files(ref: MiniBatchRef, config: dict[str, Any]) -> list[str]:
    """A files mini-batch: its payload is the list of absolute paths ``run()`` gets.

    Raises:
        TypeError: the payload is not a list of strings.
    """
    payload = ref.payload
    if not isinstance(payload, list) or not all(isinstance(p, str) for p in payload):
        raise TypeError(f"files mini-batch {ref.mb_id} has no list of paths as its payload")
    return list(payload)
