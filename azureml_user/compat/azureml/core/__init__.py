"""``from azureml.core import Run, Model, Dataset, Workspace`` for v1 entry scripts, offline.

Enough of Azure ML SDK v1 for what entry scripts do inside ParallelRunStep:
``Run.get_context()`` is an offline run whose metrics go to the job's logs
(``logs/user/metrics/<node>/<process>.jsonl``), ``Model.get_model_path(name)``
finds a model in a models folder, and what needs Azure's service (datasets,
workspaces) raises an error saying what to do instead. Standard library only,
Python 3.7 syntax: this runs under the job's interpreter.
"""

from __future__ import annotations

from .dataset import Dataset
from .model import Model, ModelNotFoundError
from .run import Run
from .workspace import Workspace

__all__ = ["Dataset", "Model", "ModelNotFoundError", "Run", "Workspace"]
