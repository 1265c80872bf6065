"""``Pipeline``, ``PipelineData``, ``PipelineParameter``, and the runs a submission returns."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from azureml._prsd.unsupported import Surface, module_getattr
from azureml.pipeline.core.run import PipelineRun, PortDataReference, StepRun

if TYPE_CHECKING:
    from azureml.core.datastore import Datastore
    from azureml.core.workspace import Workspace


class PipelineData(Surface):
    """Data one step writes and later steps read (a step output on prsd)."""

    def __init__(
        self,
        name: str,
        datastore: Datastore | None = None,
        output_name: str | None = None,
        output_mode: str = "mount",
        output_path_on_compute: str | None = None,
        output_overwrite: bool | None = None,
        data_type: str | None = None,
        is_directory: bool | None = None,
        pipeline_output_name: str | None = None,
        training_output: Any = None,
    ) -> None:
        self.name = name
        self.datastore = datastore
        self.output_name = output_name or name
        self.output_mode = output_mode
        self.is_directory = is_directory

    @property
    def datastore_name(self) -> str:
        return self.datastore.name if self.datastore is not None else "workspaceblobstore"

    def as_input(self, input_name: str | None = None) -> PipelineData:
        return self

    def as_mount(self) -> PipelineData:
        return self

    def as_download(self, input_name: str | None = None, path_on_compute: str | None = None,
                    overwrite: bool | None = None) -> PipelineData:  # fmt: skip
        return self

    def __repr__(self) -> str:
        return f"$AZUREML_DATAREFERENCE_{self.name}"


class PipelineParameter(Surface):
    """A named value with a default, given per submission (``pipeline_parameters=``)."""

    def __init__(self, name: str, default_value: Any) -> None:
        self.name = name
        self.default_value = default_value


class Pipeline(Surface):
    """Steps to run together; ``Experiment(ws, name).submit(pipeline)`` runs them."""

    def __init__(
        self,
        workspace: Workspace,
        steps: list[Any],
        description: str | None = None,
        default_datastore: Datastore | None = None,
        default_source_directory: str | None = None,
        resolve_closure: bool = True,
        _workflow_provider: Any = None,
        _service_endpoint: Any = None,
        **kwargs: Any,
    ) -> None:
        self.workspace = workspace
        self.steps = list(steps)
        self.description = description
        self.default_datastore = default_datastore

    def validate(self) -> list[str]:
        """Problems found by writing the pipeline file (none: an empty list)."""
        from azureml._prsd.pipeline_yaml import draft

        try:
            draft("validate", self.steps, {}, self.workspace._settings.python)
        except (ValueError, TypeError) as exc:
            return [str(exc)]
        return []

    def submit(self, experiment_name: str, pipeline_parameters: dict[str, Any] | None = None,
               continue_on_step_failure: bool = False, regenerate_outputs: bool = False,
               parent_run_id: str | None = None, credential_passthrough: Any = None,
               **kwargs: Any) -> PipelineRun:  # fmt: skip
        from azureml.core.experiment import Experiment

        return Experiment(self.workspace, experiment_name).submit(
            self, pipeline_parameters=pipeline_parameters,
            continue_on_step_failure=continue_on_step_failure,
        )  # fmt: skip


__all__ = [
    "Pipeline",
    "PipelineData",
    "PipelineParameter",
    "PipelineRun",
    "PortDataReference",
    "StepRun",
]
__getattr__ = module_getattr("azureml.pipeline.core")
