"""``azureml.core.runconfig``: the image names and ``CondaDependencies`` notebooks import from here."""

from __future__ import annotations

from azureml._prsd.unsupported import module_getattr
from azureml.core.conda_dependencies import CondaDependencies

DEFAULT_CPU_IMAGE = "mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu20.04"
DEFAULT_GPU_IMAGE = "mcr.microsoft.com/azureml/openmpi4.1.0-cuda11.1-cudnn8-ubuntu20.04"

__all__ = ["DEFAULT_CPU_IMAGE", "DEFAULT_GPU_IMAGE", "CondaDependencies"]
__getattr__ = module_getattr("azureml.core.runconfig")
