"""``azureml.data.dataset_consumption_config``: the module Azure's notebooks import
``DatasetConsumptionConfig`` from (``DatasetConsumptionConfig("name", PipelineParameter(
name=..., default_value=dataset)).as_mount()``); the class is :mod:`azureml.data`'s."""

from __future__ import annotations

from azureml._prsd.unsupported import module_getattr
from azureml.data import DatasetConsumptionConfig

__all__ = ["DatasetConsumptionConfig"]
__getattr__ = module_getattr("azureml.data.dataset_consumption_config")
