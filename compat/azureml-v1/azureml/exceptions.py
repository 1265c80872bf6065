"""``azureml.exceptions``: the error classes notebooks catch."""

from __future__ import annotations

from azureml._prsd.unsupported import module_getattr
from azureml.core.compute import ComputeTargetException
from azureml.pipeline.core.run import ActivityFailedException


class UserErrorException(ValueError):
    """A call made with arguments that cannot work."""


__all__ = ["ActivityFailedException", "ComputeTargetException", "UserErrorException"]
__getattr__ = module_getattr("azureml.exceptions")
