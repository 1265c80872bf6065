"""``azureml.core`` for notebooks that submit to prsd: see docs/azure-sdk.md.

A workspace is a spool named in ``config.json``; datastores are folders; a v1
``Pipeline`` is submitted as Azure's pipeline YAML to that spool. Calls of the v1 SDK
outside this surface raise ``NotImplementedError`` naming the call.
"""

from __future__ import annotations

from azureml._prsd.unsupported import module_getattr
from azureml.core.compute import ComputeTarget
from azureml.core.conda_dependencies import CondaDependencies
from azureml.core.dataset import Dataset
from azureml.core.datastore import Datastore
from azureml.core.environment import Environment
from azureml.core.experiment import Experiment
from azureml.core.model import Model
from azureml.core.run import Run
from azureml.core.workspace import Workspace

VERSION = "1.60.0+prsd"
__version__ = VERSION

__all__ = [
    "VERSION",
    "ComputeTarget",
    "CondaDependencies",
    "Dataset",
    "Datastore",
    "Environment",
    "Experiment",
    "Model",
    "Run",
    "Workspace",
]
__getattr__ = module_getattr("azureml.core")
