"""prsd: a self-hosted parallel run service for Azure ParallelRunStep entry scripts.

The public Python API is :class:`EntryScript` (also importable as
``azureml_user.parallel_run.EntryScript``). Everything else is internal. This module
is imported inside workers under the job's own interpreter, so it (and what it
imports) uses only the standard library.
"""

from prsd.worker.entry_script import EntryScript

__version__ = "0.1.0"
__all__ = ["EntryScript", "__version__"]
