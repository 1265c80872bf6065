"""``azureml.core.Run``: the base of the runs a submission returns.

In an entry script, ``Run.get_context()`` comes from the workers' offline
``azureml.core`` (docs/azureml-core.md); in a notebook it has no run to return.
"""

from __future__ import annotations

from typing import Any

from azureml._prsd.unsupported import module_getattr, unsupported
from azureml.pipeline.core.run import PipelineRun


class Run(PipelineRun):
    """Azure's run class; notebooks meet its pipeline and step forms."""

    @staticmethod
    def get_context(
        allow_offline: bool = True, used_for_context_manager: bool = False, **kwargs: Any
    ) -> Any:
        unsupported("Run.get_context() outside an entry script",
                    "inside a prsd worker it returns the worker's offline run")  # fmt: skip


__getattr__ = module_getattr("azureml.core.run")
