"""Reading a pipeline file into its steps, their bindings and its settings.

Guarantees: every step is a ``command`` or ``parallel`` job, inline or from a component
file (:mod:`prsd.jobspec.component`); every ``${{parent.inputs.x}}``,
``${{parent.outputs.x}}`` and ``${{parent.jobs.<step>.outputs.<name>}}`` names
something the pipeline declares; the steps have no cycle and no two write the same
output. Each failure is one JobSpecError naming the file and line, the step and the
key. Other steps' data and code are not looked at here (the step loaders do that).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prsd.jobspec.component import load_component, merge
from prsd.jobspec.paths import is_remote, local_text
from prsd.jobspec.refs import REF, exact_ref
from prsd.jobspec.values import as_bool, as_mapping, shown, suggest
from prsd.pipeline.graph import CycleError, order

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.jobspec.yamlsafe import Doc, Site

KINDS = ("command", "parallel")
PIPELINE_KEYS = frozenset({"type", "name", "jobs", "inputs", "outputs", "settings"})
PIPELINE_IGNORED = frozenset(
    {"$schema", "display_name", "description", "experiment_name", "tags", "compute",
     "properties", "identity", "services", "default_compute", "default_datastore"}
)  # fmt: skip
SETTINGS_KEYS = frozenset({"continue_on_step_failure"})
SETTINGS_IGNORED = frozenset(
    {"default_compute", "default_datastore", "force_rerun", "default_environment"}
)
COMMAND_KEYS = frozenset(
    {"type", "component", "command", "code", "environment", "inputs", "outputs",
     "environment_variables", "limits", "retry_settings", "name"}
)  # fmt: skip
COMMAND_IGNORED = frozenset(
    {"$schema", "display_name", "description", "tags", "compute", "experiment_name",
     "resources", "properties", "identity", "services", "is_deterministic", "version",
     "queue_settings"}
)  # fmt: skip
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_UPSTREAM = re.compile(r"^parent\.jobs\.([^.]+)\.outputs\.([^.]+)$")


@dataclass(frozen=True)
class Step:
    """One step, its component merged in.

    Attributes:
        name: the step's name under ``jobs:``.
        kind: ``command`` or ``parallel``.
        body: the step's keys (component merged; component paths absolute).
        site: where the step is written (``jobs.<name>``).
        deps: the steps it reads outputs of.
    """

    name: str
    kind: str
    body: dict[str, Any]
    site: Site
    deps: tuple[str, ...] = ()


@dataclass(frozen=True)
class Pipeline:
    """A checked pipeline file.

    Attributes:
        doc: the file as read (with ``--set`` applied).
        folder: the folder its relative paths mean.
        name: its ``name``, or None.
        inputs: the pipeline's ``inputs:`` as written.
        outputs: the pipeline's ``outputs:`` as written.
        steps: the steps in an order where each follows the steps it reads from.
        continue_on_step_failure: ``settings.continue_on_step_failure``.
        ignored: Azure-only keys met, as dotted keys.
    """

    doc: Doc
    folder: Path
    name: str | None
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    steps: dict[str, Step]
    continue_on_step_failure: bool = False
    ignored: tuple[str, ...] = field(default=())

    def deps(self) -> dict[str, tuple[str, ...]]:
        return {name: step.deps for name, step in self.steps.items()}


def read_pipeline(doc: Doc, folder: Path) -> Pipeline:
    """Check a pipeline file's keys, steps and bindings.

    Raises:
        JobSpecError: see the module docstring.
    """
    data = as_mapping(doc.data, doc.site(""), "a pipeline (type: pipeline, jobs: ...)")
    ignored = _top_keys(data, doc)
    settings = as_mapping(data.get("settings") or {}, doc.site("settings"))
    go_on = False
    for key, value in settings.items():
        here = doc.site("settings").child(key)
        if key in SETTINGS_IGNORED:
            ignored.append(here.key)
        elif key in SETTINGS_KEYS:
            go_on = as_bool(value, here)
        else:
            raise here.error(f"unknown pipeline setting{suggest(key, SETTINGS_KEYS)}")
    inputs = as_mapping(data.get("inputs") or {}, doc.site("inputs"))
    outputs = as_mapping(data.get("outputs") or {}, doc.site("outputs"))
    site = doc.site("jobs")
    jobs = as_mapping(data.get("jobs"), site, "the pipeline's steps (jobs: {name: {...}})")
    if not jobs:
        raise site.error("a pipeline needs at least one step under jobs:")
    steps = {name: _step(name, value, site.child(name), folder) for name, value in jobs.items()}
    steps = {n: _bind(s, steps, inputs, outputs) for n, s in steps.items()}
    _one_writer(steps, site)
    try:
        ordered = order({n: s.deps for n, s in steps.items()})
    except CycleError as exc:
        first = exc.path[0]
        raise site.child(first).error(
            f"the steps depend on each other in a cycle: {' -> '.join(exc.path)}"
        ) from None
    name = data.get("name")
    return Pipeline(
        doc, folder, name if isinstance(name, str) else None, inputs, outputs,
        {n: steps[n] for n in ordered}, go_on, tuple(ignored),
    )  # fmt: skip


def _top_keys(data: dict[str, Any], doc: Doc) -> list[str]:
    ignored = []
    for key in data:
        if key in PIPELINE_IGNORED:
            ignored.append(key)
        elif key not in PIPELINE_KEYS:
            raise doc.site(key).error(
                f"unknown key of a pipeline{suggest(key, PIPELINE_KEYS | PIPELINE_IGNORED)}"
            )
    return ignored


def _step(name: str, value: Any, site: Site, folder: Path) -> Step:
    if not _NAME.match(name):
        raise site.error("step names must be letters, digits and _, starting with a letter or _")
    body = as_mapping(value, site, "a step (type: command | parallel, ...)")
    kind = body.get("type")
    if not isinstance(kind, str):
        raise site.child("type").error(
            f"expected the step's type (command or parallel), got {shown(kind)}"
        )
    kind = kind.strip().lower()
    if kind not in KINDS:
        raise site.child("type").error(
            f"a {kind} step is not supported; prsd runs command and parallel steps "
            "(docs/pipelines.md)"
        )
    if "component" in body:
        comp = load_component(body["component"], folder, site.child("component"), kind)
        body = merge(comp, body, site)
    if kind == "command":
        _command_keys(body, site)
    return Step(name, kind, body, site)


def _command_keys(body: dict[str, Any], site: Site) -> None:
    for key in body:
        if key == "distribution":
            raise site.child(key).error(
                "distributed command steps (MPI, PyTorch, TensorFlow) are not supported; "
                "a command step runs one process"
            )
        if key not in COMMAND_KEYS and key not in COMMAND_IGNORED:
            raise site.child(key).error(
                f"unknown key of a command step{suggest(key, COMMAND_KEYS | COMMAND_IGNORED)}"
            )
    if not isinstance(body.get("command"), str) or not body["command"].strip():
        raise site.child("command").error("required: the command line to run")


def _bind(
    step: Step, steps: dict[str, Step], inputs: dict[str, Any], outputs: dict[str, Any]
) -> Step:
    deps: list[str] = []
    for section in ("inputs", "outputs"):
        entries = as_mapping(step.body.get(section) or {}, step.site.child(section))
        for port, entry in entries.items():
            here = step.site.child(section).child(port)
            text = entry.get("path") if isinstance(entry, dict) else entry
            ref = exact_ref(text)
            if ref is None:
                if isinstance(text, str) and REF.search(text) and "parent." in text:
                    raise here.error("a binding must be the whole value: ${{parent....}}")
                continue
            dep = _check_ref(ref, here, step, steps, inputs, outputs, section)
            if dep is not None and dep not in deps:
                deps.append(dep)
    return Step(step.name, step.kind, step.body, step.site, tuple(deps))


def _check_ref(
    ref: str,
    here: Site,
    step: Step,
    steps: dict[str, Step],
    inputs: dict[str, Any],
    outputs: dict[str, Any],
    section: str,
) -> str | None:
    """The step an input reads from (None for a pipeline input/output), once checked."""
    upstream = _UPSTREAM.match(ref)
    if upstream is not None:
        if section == "outputs":
            raise here.error(f"an output cannot be bound to another step's output (${{{{{ref}}}}})")
        other, out = upstream.groups()
        if other not in steps:
            raise here.error(f"${{{{{ref}}}}}: there is no step {other!r}{suggest(other, steps)}")
        if other == step.name:
            raise here.error(f"${{{{{ref}}}}}: a step cannot read its own output")
        declared = steps[other].body.get("outputs") or {}
        if out not in declared:
            hint = suggest(out, declared) or f" (it has: {', '.join(declared) or 'no outputs'})"
            raise here.error(f"${{{{{ref}}}}}: step {other!r} has no output {out!r}{hint}")
        return other
    parts = ref.split(".")
    if len(parts) == 3 and parts[0] == "parent" and parts[1] in ("inputs", "outputs"):
        declared = inputs if parts[1] == "inputs" else outputs
        if parts[1] != section:
            raise here.error(f"${{{{{ref}}}}} cannot bind one of the step's {section}")
        if parts[2] not in declared:
            raise here.error(
                f"${{{{{ref}}}}} is not declared in the pipeline's {parts[1]}:"
                + suggest(parts[2], declared)
            )
        return None
    raise here.error(
        f"${{{{{ref}}}}} is not a binding prsd knows: ${{{{parent.inputs.NAME}}}}, "
        "${{parent.outputs.NAME}} or ${{parent.jobs.STEP.outputs.NAME}}"
    )


def _one_writer(steps: dict[str, Step], site: Site) -> None:
    """No two steps bind the same pipeline output or write the same local path."""
    seen: dict[str, str] = {}
    for step in steps.values():
        for port, entry in (step.body.get("outputs") or {}).items():
            text = entry.get("path") if isinstance(entry, dict) else entry
            if not isinstance(text, str):
                continue
            ref = exact_ref(text)
            key = ref if ref is not None else local_text(text)
            if ref is None and (is_remote(text) or not key.startswith("/")):
                continue  # a cloud path or a path inside the step's own folder
            where = f"jobs.{step.name}.outputs.{port}"
            if key in seen:
                raise (
                    site.child(step.name)
                    .child("outputs")
                    .child(port)
                    .error(
                        f"{text} is also written by {seen[key]}; two steps cannot write one output"
                    )
                )
            seen[key] = where
