"""Submitting a pipeline file: check it whole, then stage every step's job folder at once.

Guarantees: nothing is written to the spool until the file, its components and every
step's job spec have been checked (a step that reads another step's output is
checked against a stand-in for that output, made outside the spool); then
``pipelines/<id>/`` is written under a dot name and renamed into place in one step,
holding ``pipeline.json``, the file as run (``pipeline.yaml``, ``--set`` applied) and
``steps/<step>/``, each a complete job folder that the leader moves into ``inbox/``
when its turn comes. A refused pipeline leaves nothing behind.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import secrets
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from prsd.errors import JobSpecError
from prsd.jobspec.checkset import check_overrides
from prsd.jobspec.envfiles import conda_mapping
from prsd.jobspec.load import load_job_spec
from prsd.jobspec.overrides import apply_overrides, parse_override
from prsd.jobspec.paths import is_remote
from prsd.jobspec.runner import RUNNER_FOLDER, RUNNER_SCRIPT, RUNNER_TEXT
from prsd.jobspec.stepjob import COMMAND_FILE, COMMAND_FOLDER, SOURCE_FOLDER, Binder, StepJob
from prsd.jobspec.steps import Pipeline, read_pipeline
from prsd.jobspec.yamlsafe import Doc, read_yaml
from prsd.spool.atomic import fsync_tree, move_verified, write_atomic
from prsd.spool.codedigest import code_digest
from prsd.spool.jobyaml import write_job_yaml
from prsd.spool.layout import JobLayout
from prsd.spool.originrecord import Origin, write_origin
from prsd.spool.pipelinelayout import PIPELINE_RECORD, PIPELINE_STEPS
from prsd.spool.pipelinerecord import PipelineRecord, StepRecord, pipelines_folder
from prsd.submit import _fresh_id, copy_named_code, snapshot_code

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from prsd.jobspec import JobSpec
    from prsd.spool.layout import SpoolLayout

PIPELINE_FILE = "pipeline.yaml"


def read_with_overrides(path: Path, overrides: Sequence[str]) -> Doc:
    """The file as ``--set`` leaves it (lines kept for the keys written in it).

    Raises:
        JobSpecError: unreadable YAML, a malformed override, or a path naming no key.
    """
    doc = read_yaml(path)
    parsed = [parse_override(o) for o in overrides]
    if parsed:
        check_overrides(doc.data, parsed)
        doc = Doc(doc.path, apply_overrides(doc.data, parsed), doc.lines)
    return doc


def submit_pipeline(
    path: Path,
    spool: SpoolLayout,
    *,
    overrides: Sequence[str] = (),
    name: str | None = None,
    reuse: Mapping[str, str] | None = None,
    retry_of: str = "",
    origin: Path | None = None,
    specs: dict[str, JobSpec] | None = None,
    check: Callable[[Path, JobSpec], None] | None = None,
) -> PipelineRecord:
    """Check the pipeline file ``path`` and stage it in ``pipelines/``; its record.

    Args:
        reuse: steps whose completed job (by id) stands in for them (``prsctl retry``).
        retry_of: the pipeline this one runs again.
        origin: the folder the file's relative paths mean (default: the file's own).
        specs: filled with each staged step's spec as checked (for its notes).
        check: ``check(step_folder, spec)`` may refuse a step's spec before anything is
            staged (``prsd run``: an environment this node cannot build); its
            JobSpecError, keyed in the step's job, is keyed in the pipeline file.

    Raises:
        JobSpecError: anything in the file, its components or its steps that cannot run.
        OSError: the spool is not writable.
    """
    path = path.absolute()
    doc = read_with_overrides(path, overrides)
    pipeline = read_pipeline(doc, origin or path.parent)
    reuse = dict(reuse or {})
    stem = path.parent.name if path.stem in ("pipeline", "job") else path.stem
    base = name or pipeline.name or stem
    pid = _fresh_id(spool, base)
    while os.path.lexists(spool.pipeline(pid).root):
        pid = _fresh_id(spool, base)
    ids: dict[str, str] = {}
    for step in pipeline.steps:
        ids[step] = reuse.get(step) or _fresh_id(spool, f"{base}-{step}")
    binder = Binder(pipeline, {s: spool.jobs / i for s, i in ids.items()})
    jobs = {
        s: binder.job(step, ids[s], f"{base}-{s}")
        for s, step in pipeline.steps.items()
        if s not in reuse
    }
    record = PipelineRecord(
        pid,
        base,
        str(origin / path.name if origin else path),
        {
            s: StepRecord(s, st.kind, ids[s], st.deps, s in reuse)
            for s, st in pipeline.steps.items()
        },
        pipeline.continue_on_step_failure,
        pipeline.ignored,
        overrides=tuple(overrides),
        retry_of=retry_of,
    )
    folder = pipelines_folder(spool)
    staging = folder / f".submit-{secrets.token_hex(8)}"
    staging.mkdir(mode=0o700)
    try:
        checked = _stage(staging, pipeline, jobs, spool, check)
        write_atomic(staging / PIPELINE_RECORD, record.to_json())
        text = yaml.safe_dump(doc.data, sort_keys=False, allow_unicode=True)
        write_atomic(staging / PIPELINE_FILE, text.encode())
        fsync_tree(staging)
        if not move_verified(staging, folder / pid):
            raise OSError(f"could not move {staging} into {folder}")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if specs is not None:
        specs.update(checked)
    return record


def _stage(
    staging: Path,
    pipeline: Pipeline,
    jobs: dict[str, StepJob],
    spool: SpoolLayout,
    check: Callable[[Path, JobSpec], None] | None,
) -> dict[str, JobSpec]:
    (staging / PIPELINE_STEPS).mkdir()
    specs = {}
    with tempfile.TemporaryDirectory(prefix="prsd-standin-") as tmp:
        for name, job in jobs.items():
            folder = staging / PIPELINE_STEPS / name
            if job.command is None:
                _inline_conda(job, pipeline)
            _write_step(folder, job, pipeline)
            specs[name] = _check_step(folder, job, pipeline, spool, Path(tmp))
            if check is not None:
                try:
                    check(folder, specs[name])
                except JobSpecError as exc:
                    keyed = JobSpecError(f"jobs.{name}.{exc.key}", exc.location, exc.problem)
                    raise _in_pipeline(keyed, pipeline) from None
    return specs


def _inline_conda(job: StepJob, pipeline: Pipeline) -> None:
    """A parallel step's conda file, read now (as the user who submits) into its job file:
    the step carries it as it carries its code, wherever the file lies (relative to the
    file that names it: the pipeline, or the component, whose paths are absolute)."""
    task = job.yaml["jobs"][job.step].get("task")
    env = task.get("environment") if isinstance(task, dict) else None
    text = env.get("conda_file") if isinstance(env, dict) else None
    if not isinstance(env, dict) or not isinstance(text, str) or is_remote(text) or "${{" in text:
        return
    site = pipeline.steps[job.step].site.child("task.environment.conda_file")
    env["conda_file"] = conda_mapping(text, site, pipeline.folder)


def _write_step(folder: Path, job: StepJob, pipeline: Pipeline) -> None:
    folder.mkdir(mode=0o700)
    step = JobLayout(folder, job.job_id)
    text = yaml.safe_dump(job.yaml, sort_keys=False, allow_unicode=True)
    write_job_yaml(step, text)
    if job.command is None:
        return  # origin.json and code/ are written once the spec is checked
    (folder / RUNNER_FOLDER).mkdir()
    (folder / RUNNER_FOLDER / RUNNER_SCRIPT).write_text(RUNNER_TEXT, encoding="utf-8")
    (folder / COMMAND_FOLDER).mkdir()
    command = json.dumps(job.command, indent=1)
    (folder / COMMAND_FOLDER / COMMAND_FILE).write_text(command, encoding="utf-8")
    for name, (source, key) in job.files.items():
        if not source.is_file():
            raise pipeline.steps[job.step].site.child(key).error(f"{source} is not a file")
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, folder / name)
    src = folder / SOURCE_FOLDER
    if job.code is None:
        src.mkdir()
        return
    code = Path(job.code)
    if not code.is_dir():
        site = pipeline.steps[job.step].site.child("code")
        raise site.error(f"the code folder {code} does not exist")
    snapshot_code(code, src, {os.path.realpath(pipeline.folder / ".prsd-none")})


def _check_step(
    folder: Path,
    job: StepJob,
    pipeline: Pipeline,
    spool: SpoolLayout,
    tmp: Path,
) -> JobSpec:
    """Load the step's spec as the leader will (stand-ins for upstream outputs)."""
    staged = JobLayout(folder, job.job_id)
    step = pipeline.steps[job.step]
    target = spool.jobs / job.job_id
    try:
        if job.command is not None:
            return load_job_spec(folder, spool_job_dir=target, owner_uid=os.geteuid())
        data = copy.deepcopy(job.yaml)
        body = data["jobs"][job.step]
        for port, entry in (body.get("inputs") or {}).items():
            if _upstream(step, port) and isinstance(entry, dict):
                fmt = body.get("input_format")
                entry["path"] = str(_stand_in(tmp / "in" / job.step / port, entry, fmt))
        checked = tmp / f"{job.step}.yaml"
        checked.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        spec = load_job_spec(
            pipeline.folder, spool_job_dir=target, owner_uid=os.geteuid(), job_file=checked
        )
        # A note about a stand-in (made here, in place of an upstream output) is not the
        # step's: the leader notes what it finds in the real output when the step starts.
        spec = dataclasses.replace(spec, notes=tuple(n for n in spec.notes if str(tmp) not in n))
    except JobSpecError as exc:
        for name, (source, _) in job.files.items():  # the user's file, not the step's copy
            exc = JobSpecError(exc.key, exc.location, exc.problem.replace(f"./{name}", str(source)))
        raise _in_pipeline(exc, pipeline) from None
    skip = {os.path.realpath(p) for p in spec.input.paths}
    skip.update(os.path.realpath(p) for p in spec.side_inputs.values())
    skip.add(os.path.realpath(spool.root))
    if Path(spec.code_dir) == pipeline.folder:  # no task.code: the entry script alone
        copy_named_code(spec, staged.code)
    else:
        snapshot_code(Path(spec.code_dir), staged.code, skip)
    origin = Origin(str(pipeline.folder), "", code_digest(staged.code))
    write_origin(staged, origin)
    return spec


def _upstream(step: Any, port: str) -> bool:
    entry = (step.body.get("inputs") or {}).get(port)
    text = entry.get("path") if isinstance(entry, dict) else entry
    return isinstance(text, str) and "parent.jobs." in text


def _stand_in(where: Path, entry: dict[str, Any], fmt: Any) -> Path:
    """An empty stand-in of an upstream output, so the step's spec can be checked now.

    One small table in the step's ``input_format`` (CSV unless it names parquet or
    jsonl); an ``mltable`` stand-in describes it with the matching read transformation.
    """
    kind = entry.get("type", "uri_folder")
    if kind == "uri_file":
        where.parent.mkdir(parents=True, exist_ok=True)
        where.write_text("", encoding="utf-8")
        return where
    where.mkdir(parents=True, exist_ok=True)
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"a": [1]}), where / "stand-in.parquet")
        read: dict[str, Any] = {"read_parquet": {}}
    elif fmt == "jsonl":
        (where / f"stand-in.{fmt}").write_text('{"a": 1}\n', encoding="utf-8")
        read = {"read_json_lines": {}}
    else:
        (where / "stand-in.csv").write_text("a\n1\n", encoding="utf-8")
        read = {"read_delimited": {}}
    if kind == "mltable":
        table = {"paths": [{"pattern": "./*.*"}], "transformations": [read]}
        (where / "MLTable").write_text(yaml.safe_dump(table), encoding="utf-8")
    return where


def _in_pipeline(exc: JobSpecError, pipeline: Pipeline) -> JobSpecError:
    """A step loader's error, pointed at the pipeline file's line of the key.

    A command step's job holds its ``environment`` (and ``environment_variables``)
    under ``task.``; the error names the key as the pipeline file writes it.
    """
    if not exc.key.startswith("jobs."):
        return exc
    key = exc.key
    parts = key.split(".")
    step = pipeline.steps.get(parts[1]) if len(parts) > 3 else None
    if step is not None and step.kind == "command" and parts[2] == "task":
        key = ".".join(parts[:2] + parts[3:])
    return JobSpecError(key, pipeline.doc.location(key), exc.problem)
