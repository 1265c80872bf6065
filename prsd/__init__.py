"""prsd: a self-hosted parallel run service for Azure ParallelRunStep entry scripts.

The public Python API is :class:`EntryScript` (also importable as
``azureml_user.parallel_run.EntryScript``). Everything else is internal. This module
is imported inside workers under the job's own interpreter, so it (and what it
imports) uses only the standard library. ``EntryScript`` is loaded on first use:
every command imports this package, and most never need it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prsd.worker.entry_script import EntryScript

__version__ = "0.1.0"
__all__ = ["EntryScript", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "EntryScript":
        from prsd.worker.entry_script import EntryScript

        return EntryScript
    raise AttributeError(f"module 'prsd' has no attribute {name!r}")
