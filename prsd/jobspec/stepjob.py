"""Each step of a checked pipeline written as one ordinary job file (pure).

A step becomes a one-step pipeline file (so the job loader reports its keys as
``jobs.<step>.<key>`` and records the pipeline's Azure-only keys as ignored, as the
single-step form does) with every binding replaced by what it names:

- ``${{parent.inputs.x}}``: the pipeline input (a literal, or its absolute path);
- ``${{parent.outputs.x}}``: the pipeline output's entry;
- ``${{parent.jobs.<step>.outputs.<name>}}``: the absolute path where that step's job
  writes the output (:func:`place`), known before it runs because each step's job id
  is chosen at submit.

A command step becomes a job of one mini-batch whose entry script is prsd's command
runner (:mod:`prsd.worker.command`); its command line is expanded here (``$[[...]]``
groups, ``${{inputs.x}}`` / ``${{outputs.y}}``) and written to ``command.json``; the
files its ``environment`` is built from (``conda_file``, ``requirements``: paths relative
to the file that names them) are copied into the step's ``environment/`` folder, as its
code is into ``src/``, and named there, with the files their ``-r`` lines name (read
here, the one thing this module reads; they must lie in the pipeline's folder) placed
beside them as they lie beside the user's file, so the step loads its environment from
its own folder.
"""

from __future__ import annotations

import copy
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prsd.envs.reqfiles import included_files
from prsd.envs.spec import EnvError
from prsd.jobspec.paths import is_remote, local_text
from prsd.jobspec.ports import LITERAL_TYPES
from prsd.jobspec.refs import exact_ref, expand_groups, substitute
from prsd.jobspec.runner import RUNNER_FOLDER, RUNNER_SCRIPT
from prsd.jobspec.values import as_timeout
from prsd.spool.layout import JobLayout

if TYPE_CHECKING:
    from prsd.jobspec.steps import Pipeline, Step

COMMAND_FOLDER = "command"
COMMAND_FILE = "command.json"
SOURCE_FOLDER = "src"
ENV_FOLDER = "environment"
ENV_FILE_KEYS = ("conda_file", "requirements")
COMMAND_TIMEOUT_S = 3 * 24 * 3600  # a command step without limits.timeout (the longest allowed)
_SAFE_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_WRAPPER_KEEP = ("$schema", "display_name", "description", "experiment_name", "tags")


@dataclass(frozen=True)
class StepJob:
    """What a step's job folder holds (besides code snapshots).

    Attributes:
        step: the step's name.
        job_id: the id its job folder is submitted under.
        yaml: the job file's mapping.
        code: the folder to snapshot (a parallel step's ``code/``, a command's ``src/``).
        command: a command step's ``command.json``, else None.
        files: files to copy into the step's folder (name there -> the user's file and
            the step key that names it, ``environment.conda_file``).
    """

    step: str
    job_id: str
    yaml: dict[str, Any]
    code: Path | None
    command: dict[str, Any] | None
    files: dict[str, tuple[Path, str]] = field(default_factory=dict)


def place(job_root: Path, name: str, entry: Any) -> Path:
    """Where a step's output lands: its local path, else ``<job>/outputs/<name>``.

    A relative local path is inside the step's job folder; a ``uri_file`` output with
    a cloud path keeps the path's last segment as its file name (as a single job does).
    """
    kind = entry.get("type", "uri_folder") if isinstance(entry, dict) else "uri_folder"
    text = entry.get("path") if isinstance(entry, dict) else None
    if isinstance(text, str) and not is_remote(text) and exact_ref(text) is None:
        local = local_text(text)
        return Path(os.path.normpath(local if os.path.isabs(local) else job_root / local))
    folder = JobLayout(job_root, job_root.name).outputs / name
    last = text.rstrip("/").rpartition("/")[2] if isinstance(text, str) else ""
    if kind == "uri_file" and _SAFE_FILE.match(last) and ".." not in last:
        return folder / last
    return folder


class Binder:
    """Resolves one pipeline's bindings, given each step's job folder in the spool."""

    def __init__(self, pipeline: Pipeline, roots: dict[str, Path]) -> None:
        self.p = pipeline
        self.roots = roots
        self.outs = {n: self._outputs(s) for n, s in pipeline.steps.items()}

    def job(self, step: Step, job_id: str, name: str) -> StepJob:
        """The job of ``step`` (see the module docstring)."""
        body = copy.deepcopy(step.body)
        body.pop("component", None)
        body["inputs"] = {k: self._input(v) for k, v in (body.get("inputs") or {}).items()}
        body["outputs"] = self.outs[step.name]
        files: dict[str, tuple[Path, str]] = {}
        if step.kind == "command":
            body, command = self._command(step, body, files)
            folder = self._path(step.body.get("code"))
            code = Path(folder) if isinstance(folder, str) else None
        else:
            command = None
            code = None
        wrapper = {k: self.p.doc.data[k] for k in _WRAPPER_KEEP if k in self.p.doc.data}
        settings = self.p.doc.data.get("settings")
        if isinstance(settings, dict):
            rest = {k: v for k, v in settings.items() if k != "continue_on_step_failure"}
            if rest:
                wrapper["settings"] = rest
        yaml = {"type": "pipeline", "name": name, **wrapper, "jobs": {step.name: body}}
        return StepJob(step.name, job_id, yaml, code, command, files)

    def _outputs(self, step: Step) -> dict[str, Any]:
        out = {}
        for name, entry in (step.body.get("outputs") or {}).items():
            ref = exact_ref(entry.get("path") if isinstance(entry, dict) else entry)
            if ref is not None:  # parent.outputs.x
                bound = copy.deepcopy(self.p.outputs.get(ref.split(".")[2]))
                bound = bound if isinstance(bound, dict) else {}
                entry = {**bound, **(entry if isinstance(entry, dict) else {})}
                entry.pop("path", None)
                if "path" in bound:
                    entry["path"] = bound["path"]
            out[name] = entry if isinstance(entry, dict) else {}
        return out

    def output_path(self, step: str, name: str) -> Path:
        return place(self.roots[step], name, self.outs[step][name])

    def _input(self, entry: Any) -> Any:
        text = entry.get("path") if isinstance(entry, dict) else entry
        ref = exact_ref(text)
        if ref is None:
            if isinstance(entry, dict) and isinstance(text, str):
                return {**entry, "path": self._path(text)}
            return entry
        parts = ref.split(".")
        if parts[1] == "jobs":
            upstream = self.outs[parts[2]][parts[4]]
            kind = upstream.get("type", "uri_folder")
            given = entry if isinstance(entry, dict) else {}
            return {"type": kind, **given, "path": str(self.output_path(parts[2], parts[4]))}
        bound = copy.deepcopy(self.p.inputs[parts[2]])
        if not isinstance(bound, dict):
            return bound  # a literal pipeline input
        if bound.get("type") in LITERAL_TYPES:
            return bound.get("value", bound.get("default"))
        if isinstance(bound.get("path"), str):
            bound["path"] = self._path(bound["path"])
        return {**bound, **(entry if isinstance(entry, dict) else {}), "path": bound.get("path")}

    def _path(self, text: Any) -> Any:
        if not isinstance(text, str) or is_remote(text) or "${{" in text:
            return text
        local = local_text(text)
        return local if os.path.isabs(local) else os.path.normpath(self.p.folder / local)

    def _command(
        self, step: Step, body: dict[str, Any], files: dict[str, tuple[Path, str]]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        refs = self._refs(step.name, body)
        site = step.site.child("command")
        text = substitute(expand_groups(str(body["command"]), refs, site), refs, site)
        outputs = [
            {"name": n, "path": refs[f"outputs.{n}"], "type": e.get("type", "uri_folder")}
            for n, e in body["outputs"].items()
        ]
        limits = body.get("limits") or {}
        timeout = COMMAND_TIMEOUT_S
        if isinstance(limits, dict) and limits.get("timeout") is not None:
            timeout = int(as_timeout(limits["timeout"], step.site.child("limits").child("timeout")))
        retries = (body.get("retry_settings") or {}).get("max_retries", 2)
        env = copy.deepcopy(body.get("environment"))
        if isinstance(env, dict):
            for key in ENV_FILE_KEYS:
                if isinstance(env.get(key), str):
                    env[key] = self._env_file(env[key], f"environment.{key}", files, step)
        task: dict[str, Any] = {
            "code": f"./{RUNNER_FOLDER}",
            "entry_script": RUNNER_SCRIPT,
            "environment_variables": body.get("environment_variables") or {},
        }
        if env is not None:
            task["environment"] = env
        job = {k: v for k, v in body.items() if k in _IGNORED_KEPT}
        job.update(
            type="parallel",
            input_data=f"./{COMMAND_FOLDER}",
            mini_batch_size=1,
            resources={"instance_count": 1, "max_concurrency_per_instance": 1},
            mini_batch_error_threshold=0,
            retry_settings={"max_retries": retries, "timeout": timeout},
            task=task,
        )
        command = {"step": step.name, "command": text, "outputs": outputs}
        return job, command

    def _env_file(self, text: str, key: str, files: dict[str, tuple[Path, str]], step: Step) -> str:
        """``./environment/<name>`` for the user's file ``text`` (noted in ``files`` with
        the files its ``-r`` lines name, laid out as they lie around it).

        Raises:
            JobSpecError: at ``key``: a ``-r`` file that is missing or outside the
                pipeline's folder.
        """
        if is_remote(text) or "${{" in text:
            return text  # the loader names what it cannot read
        source = Path(self._path(text))
        included = self._included(source, key, step)
        base = Path(os.path.commonpath([source.parent, *(p.parent for p in included)]))
        name = f"{ENV_FOLDER}/{source.relative_to(base).as_posix()}"
        files[name] = (source, key)
        for path in included:
            files[f"{ENV_FOLDER}/{path.relative_to(base).as_posix()}"] = (path, key)
        return f"./{name}"

    def _included(self, source: Path, key: str, step: Step) -> list[Path]:
        """The files ``source``'s ``-r`` lines name (none when it cannot be read: the
        step's load says why)."""
        try:
            text = source.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError):
            return []
        try:
            return included_files(
                text,
                source.parent,
                str(source),
                conda=key.endswith("conda_file"),
                inside=self.p.folder,
                inside_name="the pipeline's folder",
            )
        except EnvError as exc:
            raise step.site.child(key).error(str(exc)) from None

    def _refs(self, name: str, body: dict[str, Any]) -> dict[str, str | None]:
        refs: dict[str, str | None] = {}
        for port, entry in body["inputs"].items():
            if isinstance(entry, dict):
                held = entry.get("path", entry.get("value", entry.get("default")))
            else:
                held = entry
            refs[f"inputs.{port}"] = None if held is None else _text(held)
        for port in body["outputs"]:
            refs[f"outputs.{port}"] = str(self.output_path(name, port))
        return refs


# A command step's Azure-only keys, kept in its job so the loader records them as ignored.
_IGNORED_KEPT = (
    "$schema",
    "compute",
    "display_name",
    "description",
    "tags",
    "experiment_name",
    "version",
    "is_deterministic",
    "properties",
    "identity",
    "services",
)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"  # Azure writes Python's spelling
    return str(value)
