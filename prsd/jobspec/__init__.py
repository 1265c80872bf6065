"""The job spec: ``job.yaml`` (Azure v2 names, v1 aliases) normalised once into a frozen JobSpec.

No other module sees an alias, a raw YAML mapping or an Azure ``${{...}}`` reference.

The names below are loaded on first use: a module that needs only one part of the
package (``prsd.jobspec.said`` for ``prsctl status``) does not pay for the YAML loader.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prsd.jobspec.load import find_job_file, load_job_spec
    from prsd.jobspec.model import InputSpec, JobSpec

__all__ = ["InputSpec", "JobSpec", "find_job_file", "load_job_spec"]

_HOME = {
    "InputSpec": "prsd.jobspec.model",
    "JobSpec": "prsd.jobspec.model",
    "find_job_file": "prsd.jobspec.load",
    "load_job_spec": "prsd.jobspec.load",
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
