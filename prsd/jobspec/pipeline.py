"""Finding the parallel job in a job file: the whole file, or the one step of a pipeline.

Azure's docs show a parallel job as a step of a pipeline YAML (``type: pipeline``,
``jobs: {name: {type: parallel, ...}}``). Guarantees: such a file loads when it holds
exactly one step and that step is a parallel job; any other step type, several parallel
steps, or a step loaded from a component file is an error that names them. The
pipeline's ``inputs``/``outputs`` become the ``${{parent.inputs.x}}`` /
``${{parent.outputs.x}}`` bindings of the step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from prsd.jobspec.ports import Port, parse_ports
from prsd.jobspec.schema import PIPELINE_AZURE_ONLY, PIPELINE_KEYS
from prsd.jobspec.values import as_mapping, shown, suggest
from prsd.jobspec.yamlsafe import Doc, Setting, Site


@dataclass(frozen=True)
class Selected:
    """The parallel job's mapping and what surrounds it.

    Attributes:
        job: the parallel job's keys.
        site: where the mapping is (key prefix "" or ``jobs.<step>``).
        parent: the pipeline's declarations by reference (``parent.inputs.x``).
        ignored: Azure-only keys of the pipeline around the step.
        pipeline_name: the pipeline's ``name``, a default for the job's name.
    """

    job: dict[str, Any]
    site: Site
    parent: dict[str, Port] = field(default_factory=dict)
    ignored: tuple[str, ...] = ()
    pipeline_name: Any = None


def top_mapping(doc: Doc) -> dict[str, Any]:
    """The document's top-level mapping.

    Raises:
        JobSpecError: the file is empty, or its top level is not a mapping.
    """
    site = doc.site("")
    if doc.data is None:
        raise site.error("the file is empty; expected a parallel job (input_data, task, ...)")
    return as_mapping(doc.data, site, "a mapping of keys at the top level")


def select_job(doc: Doc) -> Selected:
    """The parallel job held by ``doc``.

    Raises:
        JobSpecError: a pipeline that does not hold exactly one step, a parallel one.
    """
    data = top_mapping(doc)
    kind = data.get("type")
    if not (isinstance(kind, str) and kind.strip().lower() == "pipeline"):
        return Selected(data, doc.site(""))
    ignored = _check_pipeline_keys(data, doc)
    step, job = _only_parallel_step(data.get("jobs"), doc.site("jobs"))
    parent = {}
    for section in ("inputs", "outputs"):
        setting = Setting(data[section], doc.site(section)) if section in data else None
        ports = parse_ports(setting, {}, outputs=section == "outputs")
        parent.update({f"parent.{section}.{n}": p for n, p in ports.ports.items()})
        ignored.extend(ports.ignored)
    return Selected(job, step, parent, tuple(ignored), data.get("name"))


def _check_pipeline_keys(data: dict[str, Any], doc: Doc) -> list[str]:
    ignored = []
    for key in data:
        if key in PIPELINE_AZURE_ONLY:
            ignored.append(key)
        elif key not in PIPELINE_KEYS:
            hint = suggest(key, PIPELINE_KEYS | PIPELINE_AZURE_ONLY)
            raise doc.site(key).error(f"unknown key of a pipeline{hint}")
    return ignored


def _only_parallel_step(jobs: Any, site: Site) -> tuple[Site, dict[str, Any]]:
    steps = as_mapping(jobs, site, "the pipeline's steps (jobs: {name: {type: parallel, ...}})")
    if not steps:
        raise site.error("a pipeline needs jobs:, holding one parallel job")
    kinds = {name: _step_type(step, site.child(name)) for name, step in steps.items()}
    _refuse_other_steps(kinds, site)
    parallel = list(kinds)
    if len(parallel) > 1:
        raise site.error(f"prsd runs one parallel job per job file; found {', '.join(parallel)}")
    name = parallel[0]
    if "component" in steps[name]:
        raise (
            site.child(name)
            .child("component")
            .error(
                "a parallel component loaded from another file is not supported; "
                "write the component's keys into this step"
            )
        )
    return site.child(name), steps[name]


def _refuse_other_steps(kinds: dict[str, str], site: Site) -> None:
    others = {name: kind for name, kind in kinds.items() if kind != "parallel"}
    if others:
        listed = ", ".join(f"{name} ({kind})" for name, kind in others.items())
        raise site.child(next(iter(others))).error(
            f"prsd runs a pipeline's parallel job only, and this pipeline also has: {listed}; "
            "run those steps first and give their outputs as local paths"
        )


def _step_type(step: Any, site: Site) -> str:
    mapping = as_mapping(step, site, "a job mapping (type: parallel, ...)")
    kind = mapping.get("type")
    if not isinstance(kind, str):
        raise site.child("type").error(f"expected the step's type (parallel), got {shown(kind)}")
    return kind.strip().lower()
