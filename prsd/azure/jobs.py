"""``client.jobs``: create_or_update, stream, get and download of v2 jobs on a spool.

Guarantees: ``create_or_update`` serialises the SDK's own job object with the SDK's
own ``_to_dict()`` (:mod:`prsd.azure.sdkyaml` only makes local paths absolute and
inline components files), writes it to ``.prsd-submissions/<name>-*/pipeline.yml`` in
the current folder and submits that file as ``prsctl submit FILE.yml`` does (saying on
stderr when no leader or agent serves the spool), or in local mode runs it in a
background ``prsd run`` (:mod:`prsd.azure.background`); the job's ``name`` becomes the
pipeline's id. ``stream`` prints progress until the end and
raises the SDK's ``JobException`` unless the job completed; ``download`` copies a
pipeline output to ``<download_path>/named-outputs/<output_name>/`` (Azure's layout),
or, without ``output_name``, every step's logs to ``<download_path>/artifacts/``.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from prsd.azure.background import run_in_background
from prsd.azure.sdkyaml import for_prsd, pipeline_mapping
from prsd.azure.watch import (
    ENDED,
    Tail,
    logs_folder,
    pipeline_status,
    read_json,
    result_file,
    step_states,
    step_tails,
    v2_status,
)
from prsd.spool.layout import SpoolLayout
from prsd.spool.pipelinelayout import PipelineLayout

if TYPE_CHECKING:
    import builtins
    import subprocess
    from collections.abc import Iterator

SUBMISSIONS = ".prsd-submissions"
POLL_S = 1.0


def _say(text: str = "") -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


class JobOperations:
    """The ``jobs`` operations of :class:`prsd.azure.MLClient`."""

    def __init__(self, spool: Path, python: str, *, local: bool = False) -> None:
        self.spool = spool
        self.python = python
        self.local = local
        self._jobs: dict[str, Any] = {}
        self._runs: dict[str, subprocess.Popen[bytes]] = {}  # local mode: each job's prsd run

    def create_or_update(self, job: Any, *, description: str | None = None,
                         compute: str | None = None, tags: dict[str, str] | None = None,
                         experiment_name: str | None = None, skip_validation: bool = False,
                         **kwargs: Any) -> Any:  # fmt: skip
        """Submit the SDK job object ``job``; returns it, named by the pipeline id."""
        from prsd.errors import PrsdError
        from prsd.pipesubmit import submit_pipeline
        from prsd.spool.opening import open_spool

        name = experiment_name or job.experiment_name or job.display_name or job.name or "job"
        data = pipeline_mapping(job._to_dict(), str(name))
        parent = Path.cwd() / SUBMISSIONS
        parent.mkdir(exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix=f"{_safe(str(name))}-", dir=parent))
        data = self._on_python(for_prsd(data, folder, Path.cwd()))
        file = folder / "pipeline.yml"
        file.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
        spool = open_spool(self.spool)
        if self.local:
            pid, self._runs[str(name)] = run_in_background(file, spool.root, str(name), folder)
        else:
            try:
                pid = submit_pipeline(file, spool, name=str(name)).pipeline_id
            except PrsdError as exc:
                raise ValueError(f"prsd refused the job ({file}): {exc}") from None
            _warn_if_unserved(spool)
        job.name = pid
        job._status = "NotStarted"
        self._jobs[pid] = job
        return job

    def _on_python(self, data: dict[str, Any]) -> dict[str, Any]:
        """Every step run on the client's ``python=`` interpreter (nothing built), if given."""
        if not self.python:
            return data
        for step in data.get("jobs", {}).values():
            if step.get("type") == "parallel":
                step["task"] = {**(step.get("task") or {}), "environment": {"python": self.python}}
            else:
                step["environment"] = {"python": self.python}
        return data

    def _folder(self, name: str) -> Path:
        folder = SpoolLayout(self.spool).pipeline(name).root
        if not _record_path(folder).is_file():
            raise KeyError(f"no job {name!r} in {self.spool}")
        return folder

    def get(self, name: str) -> Any:
        """The job object (this process's own, else loaded from its file), status refreshed."""
        folder = self._folder(name)
        job = self._jobs.get(name)
        if job is None:
            from azure.ai.ml import load_job

            record = read_json(_record_path(folder)) or {}
            job = load_job(source=str(record.get("file", "")))
            job.name = name
        job._status = v2_status_of(self.spool, folder)
        return job

    def list(self, parent_job_name: str | None = None, **kwargs: Any) -> Iterator[Any]:
        """The step jobs of ``parent_job_name`` (their names are prsd job ids)."""
        if parent_job_name is None:
            raise NotImplementedError(
                "jobs.list() without parent_job_name is not supported by prsd"
            )
        folder = self._folder(parent_job_name)
        record = read_json(_record_path(folder)) or {}
        for key, step in (record.get("steps") or {}).items():
            yield _StepJob(
                key,
                str(step.get("job_id", "")),
                step_states(self.spool, folder).get(key, ("Waiting", ""))[0],
            )

    def stream(self, name: str) -> None:
        """Print the job's progress until it ends; raise ``JobException`` unless it completed."""
        folder = self._folder(name)
        _say(f"RunId: {name}")
        _say(f"Web View: {folder}")
        _say("")
        _say("Streaming logs/azureml/executionlogs.txt")
        _say("========================================")
        _say("")
        seen: dict[str, str] = {}
        tails: dict[str, builtins.list[Tail]] = {}
        while True:
            ended = pipeline_status(self.spool, folder) in ENDED
            self._show(folder, seen, tails)
            if ended:
                break
            time.sleep(POLL_S)
        status = v2_status_of(self.spool, folder)
        _say("")
        _say("Execution Summary")
        _say("=================")
        _say(f"RunId: {name}")
        _say(f"Web View: {folder}")
        if status != "Completed":
            from azure.ai.ml.exceptions import ErrorCategory, ErrorTarget, JobException

            failed: Any = (
                JobException  # the SDK's annotations name its enums, its values are strings
            )

            result = result_file(folder)
            text = result.read_text(encoding="utf-8") if result.exists() else status
            message = f"Job {name} ended {status}: {text.strip()}"
            raise failed(message=message, no_personal_data_message=f"Job ended {status}",
                               target=ErrorTarget.JOB, error_category=ErrorCategory.USER_ERROR)  # fmt: skip

    def _show(
        self, folder: Path, seen: dict[str, str], tails: dict[str, builtins.list[Tail]]
    ) -> None:
        record = read_json(_record_path(folder)) or {}
        for key, (state, _) in step_states(self.spool, folder).items():
            job_id = str((record.get("steps") or {}).get(key, {}).get("job_id", "-"))
            job = SpoolLayout(self.spool).job(job_id).root
            status = v2_status(state)
            if status != "NotStarted" and key not in tails:
                tails[key] = step_tails(job)
            for line in (ln for t in tails.get(key, []) for ln in t.new_lines()):
                _say(f"[{key}] {line}")
            if seen.get(key) != status:
                seen[key] = status
                _say(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] step {key} ({job.name}): {status}")

    def download(
        self,
        name: str,
        *,
        download_path: str | Path = ".",
        output_name: str | None = None,
        all: bool = False,
    ) -> None:
        """Copy an output (or, without ``output_name``, the steps' logs) into ``download_path``."""
        folder = self._folder(name)
        record = read_json(_record_path(folder)) or {}
        steps = {
            k: SpoolLayout(self.spool).job(str(v.get("job_id", ""))).root
            for k, v in (record.get("steps") or {}).items()
        }
        dest_root = Path(download_path)
        if output_name is None or all:
            for key, job in steps.items():
                if logs_folder(job).is_dir():
                    shutil.copytree(
                        logs_folder(job),
                        dest_root / "artifacts" / key / logs_folder(job).name,
                        dirs_exist_ok=True,
                    )
            if output_name is None:
                return
        src = _output_place(Path(str(record.get("file", ""))), steps, output_name)
        dest = dest_root / "named-outputs" / output_name
        if src.is_dir():
            shutil.copytree(src, dest, dirs_exist_ok=True)
        elif src.is_file():
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest / src.name)
        else:
            raise FileNotFoundError(f"output {output_name!r} of job {name} was not written ({src})")


def _record_path(folder: Path) -> Path:
    """The pipeline's ``pipeline.json``."""
    return PipelineLayout(folder, folder.name).record


def v2_status_of(spool: Path, folder: Path) -> str:
    """The pipeline's v2 status."""
    status = pipeline_status(spool, folder)
    return "Completed" if status == "Finished" else status


def _output_place(file: Path, steps: dict[str, Path], output_name: str) -> Path:
    """Where a pipeline output (``${{parent.outputs.NAME}}``) or a step output landed."""
    from prsd.jobspec.stepjob import place

    data = yaml.safe_load(file.read_text(encoding="utf-8")) if file.is_file() else {}
    bound = "${{parent.outputs." + output_name + "}}"
    found = []
    for key, step in (data.get("jobs") or {}).items():
        for out, entry in (step.get("outputs") or {}).items():
            path = entry.get("path") if isinstance(entry, dict) else entry
            if (isinstance(path, str) and path.replace(" ", "") == bound) or out == output_name:
                top = (data.get("outputs") or {}).get(output_name)
                found.append(place(steps[key], out, top if isinstance(top, dict) else entry))
    if len(found) != 1:
        raise KeyError(f"no single output {output_name!r} in {file}")
    return found[0]


class _StepJob:
    """A step of a pipeline job, as ``jobs.list(parent_job_name=...)`` yields it."""

    def __init__(self, display_name: str, name: str, state: str) -> None:
        self.display_name = display_name
        self.name = name
        self.status = v2_status(state)


def _warn_if_unserved(spool: Any) -> None:
    """A line on stderr when no leader or agent serves the spool (nothing would run it)."""
    from datetime import UTC, datetime

    from prsd.read.fleet import fleet_warning, read_fleet

    what = "queued (MLClient(..., local=True) runs it in this machine, no daemons)"
    warning = fleet_warning(read_fleet(spool, datetime.now(UTC)), what)
    if warning is not None:
        sys.stderr.write(f"warning: {warning}\n")
        sys.stderr.flush()


def _safe(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.-]", "_", text) or "job"
