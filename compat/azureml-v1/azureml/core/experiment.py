"""``Experiment``: a name; ``submit(pipeline)`` writes and submits the pipeline to the spool."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from azureml._prsd.unsupported import Surface, module_getattr, unsupported

if TYPE_CHECKING:
    from azureml.core.workspace import Workspace
    from azureml.pipeline.core import PipelineRun


class Experiment(Surface):
    """A named group of runs; its runs are pipelines submitted to the workspace's spool."""

    def __init__(self, workspace: Workspace, name: str, _skip_name_validation: bool = False,
                 _id: str | None = None, _archived_time: Any = None, _create_in_cloud: bool = True,
                 _experiment_dto: Any = None, **kwargs: Any) -> None:  # fmt: skip
        self.workspace = workspace
        self.name = name

    def submit(self, config: Any, tags: dict[str, str] | None = None, **kwargs: Any) -> PipelineRun:
        """Submit a ``Pipeline`` (``pipeline_parameters=``, ``continue_on_step_failure=``)."""
        from azureml._prsd.submitting import submit_pipeline
        from azureml.pipeline.core import Pipeline

        if not isinstance(config, Pipeline):
            unsupported(
                f"Experiment.submit({type(config).__name__})", "only a Pipeline is submitted"
            )
        params = dict(kwargs.get("pipeline_parameters") or {})
        return submit_pipeline(
            self, config, params, bool(kwargs.get("continue_on_step_failure", False))
        )

    def __repr__(self) -> str:
        return f"Experiment(Name: {self.name}, Workspace: {self.workspace.name})"


__getattr__ = module_getattr("azureml.core.experiment")
