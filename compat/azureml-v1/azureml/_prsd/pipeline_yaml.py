"""A v1 ``Pipeline`` written as Azure's pipeline YAML (``type: pipeline``) for prsd.

Guarantees (pure: no file is read or written but through the datasets' own
``prsd_input``): every ``ParallelRunStep`` becomes a ``type: parallel`` step and every
``PythonScriptStep`` a ``type: command`` step, under a step name prsd accepts (the v1
name with other characters as ``_``; :attr:`Draft.names` maps them back). A
``PipelineData`` written by one step and read by another becomes
``${{parent.jobs.<writer>.outputs.<name>}}``; a ``PipelineParameter`` becomes its value
(the submission's ``pipeline_parameters`` entry, else its default) wherever Azure takes
one: step arguments, ``ParallelRunConfig`` settings (``mini_batch_size``,
``process_count_per_node`` ...) and a dataset input (``DatasetConsumptionConfig(name,
PipelineParameter(...))``). A ``pipeline_parameters`` name that no ``PipelineParameter``
of the pipeline has is a ``ValueError`` naming the ones it has.
v1 settings map to the v2 keys prsd reads (docs/jobspec.md): ``error_threshold``,
``mini_batch_error_threshold``, ``retry_settings``, ``resources.instance_count``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from azureml.pipeline.core import PipelineData, PipelineParameter
from azureml.pipeline.steps import ParallelRunStep, PythonScriptStep

_BAD = re.compile(r"[^A-Za-z0-9_]")


@dataclass
class Draft:
    """The pipeline file's mapping and what the run needs to find its steps again."""

    data: dict[str, Any]
    names: dict[str, str] = field(default_factory=dict)  # v1 step name -> prsd step name
    outputs: dict[str, tuple[str, str]] = field(default_factory=dict)  # data name -> (step, file)


class Params:
    """The submission's ``pipeline_parameters``, and which the pipeline's steps used."""

    def __init__(self, given: dict[str, Any]) -> None:
        self.given = dict(given)
        self.used: set[str] = set()

    def value(self, value: Any) -> Any:
        """``value``, or a ``PipelineParameter``'s value for this submission."""
        if isinstance(value, PipelineParameter):
            self.used.add(value.name)
            return self.given.get(value.name, value.default_value)
        return value

    def check_all_used(self) -> None:
        """Raises ValueError: a given name no ``PipelineParameter`` of the pipeline has."""
        unknown = sorted(set(self.given) - self.used)
        if unknown:
            has = ", ".join(sorted(self.used)) or "none"
            raise ValueError(
                f"pipeline_parameters names {', '.join(map(repr, unknown))}, which no "
                f"PipelineParameter of the pipeline has (it has: {has})"
            )


def step_key(name: str, taken: set[str]) -> str:
    """A step name prsd accepts (``^[A-Za-z_][A-Za-z0-9_]*$``), unique in the pipeline."""
    key = _BAD.sub("_", name)[:90] or "step"
    if not (key[0].isalpha() or key[0] == "_"):
        key = "_" + key
    base, n = key, 2
    while key in taken:
        key, n = f"{base}_{n}", n + 1
    taken.add(key)
    return key


def draft(name: str, steps: list[Any], params: dict[str, Any], python: str,
          continue_on_step_failure: bool = False) -> Draft:  # fmt: skip
    """The pipeline file for ``steps`` (see the module docstring).

    Raises:
        ValueError: a step prsd cannot write (see the module docstring), or an unknown
            ``params`` name.
        TypeError: a step of a kind prsd does not run.
    """
    given = Params(params)
    taken: set[str] = set()
    out = Draft({"type": "pipeline", "name": name, "experiment_name": name})
    for step in steps:
        out.names[step.name] = step_key(step.name, taken)
    writers: dict[str, str] = {}
    for step in steps:
        for data in _written(step):
            writers[data.name] = out.names[step.name]
    jobs: dict[str, Any] = {}
    for step in steps:
        key = out.names[step.name]
        if isinstance(step, ParallelRunStep):
            jobs[key] = _parallel(step, key, writers, given, python, out)
        elif isinstance(step, PythonScriptStep):
            jobs[key] = _command(step, writers, given, python)
        else:
            raise TypeError(
                f"{type(step).__name__} is not a step prsd runs (ParallelRunStep, PythonScriptStep)"
            )
    given.check_all_used()
    out.data["settings"] = {"continue_on_step_failure": continue_on_step_failure}
    out.data["jobs"] = jobs
    return out


def _written(step: Any) -> list[PipelineData]:
    if isinstance(step, ParallelRunStep):
        return [step.output] if step.output is not None else []
    return [o for o in step.outputs if _is_data(o)]


def _is_data(value: Any) -> bool:
    from azureml.data import OutputFileDatasetConfig

    return isinstance(value, (PipelineData, OutputFileDatasetConfig))


def _input(
    value: Any, writers: dict[str, str], step: str, params: Params
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(input name, entry, extra step settings) of a step input."""
    from azureml.data import DatasetConsumptionConfig

    if _is_data(value):
        writer = writers.get(value.name)
        if writer is None:
            raise ValueError(
                f"step {step!r} reads {value.name!r}, which no step of the pipeline writes"
            )
        return value.name, {"path": f"${{{{parent.jobs.{writer}.outputs.{value.name}}}}}"}, {}
    if isinstance(value, DatasetConsumptionConfig):
        dataset = params.value(value.dataset)
        if not hasattr(dataset, "prsd_input"):
            raise TypeError(f"step {step!r}: input {value.name!r} is {dataset!r}, not a dataset")
        entry, extra = dataset.prsd_input()
        return value.name, entry, extra
    if hasattr(value, "prsd_input"):
        entry, extra = value.prsd_input()
        return value.name or "input", entry, extra
    raise TypeError(f"step {step!r}: cannot use {value!r} as an input")


def _argument(value: Any, inputs: dict[str, str], outputs: set[str], params: Params) -> str:
    if isinstance(value, PipelineParameter):
        return str(params.value(value))
    if _is_data(value):
        return (
            f"${{{{outputs.{value.name}}}}}"
            if value.name in outputs
            else f"${{{{inputs.{value.name}}}}}"
        )
    name = getattr(value, "name", None)
    if name in inputs and hasattr(value, "dataset"):
        return f"${{{{inputs.{name}}}}}"
    return str(value)


def _parallel(step: ParallelRunStep, key: str, writers: dict[str, str], params: Params,
              python: str, out: Draft) -> dict[str, Any]:  # fmt: skip
    cfg = _Settings(step.parallel_run_config, params)
    if len(step.inputs) != 1:
        raise ValueError(
            f"step {step.name!r}: a ParallelRunStep takes one input, not {len(step.inputs)}"
        )
    body: dict[str, Any] = {"type": "parallel", "inputs": {}, "outputs": {}}
    extra_all: dict[str, Any] = {}
    names: dict[str, str] = {}
    for value in [*step.inputs, *step.side_inputs]:
        name, entry, extra = _input(value, writers, step.name, params)
        body["inputs"][name] = entry
        names[name] = name
        extra_all.update(extra)
    main = next(iter(body["inputs"]))
    body["input_data"] = f"${{{{inputs.{main}}}}}"
    task: dict[str, Any] = {"type": "run_function", "code": str(Path(cfg.source_directory or ".").absolute()),
                            "entry_script": cfg.entry_script}  # fmt: skip
    outs = _parallel_output(step, key, body, task, out)
    args = [_argument(a, names, outs, params) for a in step.arguments]
    if args:
        task["program_arguments"] = args
    env = cfg.environment.prsd_environment(python) if cfg.environment is not None else None
    if env is not None:
        task["environment"] = env
    body.update(extra_all)
    if cfg.partition_keys:
        body["partition_keys"] = list(cfg.partition_keys)
    elif cfg.mini_batch_size is not None:
        body["mini_batch_size"] = str(cfg.mini_batch_size)
    body["resources"] = {"instance_count": int(cfg.node_count)}
    if cfg.process_count_per_node is not None:
        body["max_concurrency_per_instance"] = int(cfg.process_count_per_node)
    body["error_threshold"] = int(cfg.error_threshold)
    if cfg.allowed_failed_count is not None:
        body["mini_batch_error_threshold"] = int(cfg.allowed_failed_count)
    if cfg.allowed_failed_percent is not None:
        body["allowed_failed_percent"] = cfg.allowed_failed_percent
    body["logging_level"] = cfg.logging_level
    body["retry_settings"] = {"max_retries": max(0, int(cfg.run_max_try) - 1),
                              "timeout": int(cfg.run_invocation_timeout)}  # fmt: skip
    envvars = {
        **(cfg.environment.environment_variables if cfg.environment else {}),
        **cfg.environment_variables,
    }
    if envvars:
        body["environment_variables"] = {k: str(v) for k, v in envvars.items()}
    body["task"] = task
    return body


class _Settings:
    """A ``ParallelRunConfig`` read with its ``PipelineParameter`` values resolved."""

    def __init__(self, cfg: Any, params: Params) -> None:
        self._cfg = cfg
        self._params = params

    def __getattr__(self, name: str) -> Any:
        return self._params.value(getattr(self._cfg, name))


def _parallel_output(step: ParallelRunStep, key: str, body: dict[str, Any], task: dict[str, Any],
                     out: Draft) -> set[str]:  # fmt: skip
    """The step's output: the append_row file (a ``uri_file``) or a folder."""
    if step.output is None:
        return set()
    cfg, name = step.parallel_run_config, step.output.name
    if cfg.output_action == "append_row":
        file = cfg.append_row_file_name
        path = f"azureml://datastores/{step.output.datastore_name}/paths/{name}/{file}"
        body["outputs"][name] = {"type": "uri_file", "path": path}
        task["append_row_to"] = f"${{{{outputs.{name}}}}}"
        out.outputs[name] = (key, file)
    else:
        body["outputs"][name] = {"type": "uri_folder"}
        out.outputs[name] = (key, "")
    return {name}


def _command(step: PythonScriptStep, writers: dict[str, str], params: Params,
             python: str) -> dict[str, Any]:  # fmt: skip
    body: dict[str, Any] = {"type": "command", "code": str(Path(step.source_directory).absolute())}
    inputs: dict[str, Any] = {}
    for value in step.inputs:
        name, entry, _ = _input(value, writers, step.name, params)
        inputs[name] = entry
    outs = {o.name for o in step.outputs if _is_data(o)}
    args = [_argument(a, {n: n for n in inputs}, outs, params) for a in step.arguments]
    quoted = " ".join(_quote(a) for a in args)
    body["command"] = f"python {_quote(step.script_name)} {quoted}".strip()
    if inputs:
        body["inputs"] = inputs
    if outs:
        body["outputs"] = {n: {"type": "uri_folder"} for n in sorted(outs)}
    env = _runconfig_environment(step.runconfig, python)
    if env is not None:
        body["environment"] = env
    return body


def _runconfig_environment(runconfig: Any, python: str) -> dict[str, Any] | None:
    env = getattr(runconfig, "environment", None)
    if env is not None:
        result: dict[str, Any] | None = env.prsd_environment(python)
        return result
    return {"python": python} if python else None


def _quote(text: str) -> str:
    import shlex

    return text if text.startswith("${{") else shlex.quote(text)
