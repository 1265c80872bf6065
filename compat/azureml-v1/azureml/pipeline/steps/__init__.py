"""``ParallelRunConfig``, ``ParallelRunStep``, ``PythonScriptStep``: steps kept as written.

Guarantees: each class keeps its arguments under Azure's names and defaults; turning
them into a pipeline file is :mod:`azureml._prsd.pipeline_yaml`'s work.
"""

from __future__ import annotations

from typing import Any

from azureml._prsd.unsupported import Surface, module_getattr


class ParallelRunConfig(Surface):
    """How a ``ParallelRunStep`` runs its entry script (Azure's arguments and defaults)."""

    def __init__(
        self,
        environment: Any,
        entry_script: str,
        error_threshold: int,
        output_action: str,
        compute_target: Any,
        node_count: int,
        process_count_per_node: int | None = None,
        mini_batch_size: int | str | None = None,
        source_directory: str | None = None,
        description: str | None = None,
        logging_level: str = "INFO",
        run_invocation_timeout: int = 60,
        run_max_try: int = 3,
        append_row_file_name: str | None = None,
        allowed_failed_count: int | None = None,
        allowed_failed_percent: float | None = None,
        partition_keys: list[str] | None = None,
        environment_variables: dict[str, str] | None = None,
    ) -> None:
        if output_action not in ("append_row", "summary_only"):
            raise ValueError(
                f"output_action must be 'append_row' or 'summary_only', not {output_action!r}"
            )
        self.environment = environment
        self.entry_script = entry_script
        self.error_threshold = error_threshold
        self.output_action = output_action
        self.compute_target = compute_target
        self.node_count = node_count
        self.process_count_per_node = process_count_per_node
        self.mini_batch_size = mini_batch_size
        self.source_directory = source_directory
        self.description = description
        self.logging_level = logging_level
        self.run_invocation_timeout = run_invocation_timeout
        self.run_max_try = run_max_try
        self.append_row_file_name = append_row_file_name or "parallel_run_step.txt"
        self.allowed_failed_count = allowed_failed_count
        self.allowed_failed_percent = allowed_failed_percent
        self.partition_keys = partition_keys
        self.environment_variables = dict(environment_variables or {})


class ParallelRunStep(Surface):
    """A parallel step: the entry script over the input's mini-batches."""

    def __init__(
        self,
        name: str,
        parallel_run_config: ParallelRunConfig,
        inputs: list[Any],
        output: Any = None,
        side_inputs: list[Any] | None = None,
        arguments: list[Any] | None = None,
        allow_reuse: bool = True,
    ) -> None:
        self.name = name
        self.parallel_run_config = parallel_run_config
        self.inputs = list(inputs)
        self.output = output
        self.side_inputs = list(side_inputs or [])
        self.arguments = list(arguments or [])
        self.allow_reuse = allow_reuse


class PythonScriptStep(Surface):
    """A command step: ``python SCRIPT ARGUMENTS`` in ``source_directory``."""

    def __init__(
        self,
        script_name: str,
        name: str | None = None,
        arguments: list[Any] | None = None,
        compute_target: Any = None,
        runconfig: Any = None,
        runconfig_pipeline_params: Any = None,
        inputs: list[Any] | None = None,
        outputs: list[Any] | None = None,
        params: dict[str, Any] | None = None,
        source_directory: str | None = None,
        allow_reuse: bool = True,
        version: str | None = None,
        hash_paths: list[str] | None = None,
    ) -> None:
        self.script_name = script_name
        self.name = name or script_name
        self.arguments = list(arguments or [])
        self.compute_target = compute_target
        self.runconfig = runconfig
        self.inputs = list(inputs or [])
        self.outputs = list(outputs or [])
        self.params = dict(params or {})
        self.source_directory = source_directory or "."
        self.allow_reuse = allow_reuse


__all__ = ["ParallelRunConfig", "ParallelRunStep", "PythonScriptStep"]
__getattr__ = module_getattr("azureml.pipeline.steps")
