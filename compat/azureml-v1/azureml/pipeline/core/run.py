"""``PipelineRun`` and ``StepRun``: a submitted pipeline as the notebooks see it.

Guarantees: every answer is read from the spool when asked (``pipelines/<id>/`` and
each step's ``jobs/<id>/``), so a run object stays true whether the daemons or a
background ``prsd run`` drive the pipeline; ``wait_for_completion(show_output=True)``
prints status changes and new progress lines in Azure's layout until the pipeline
ends; ``get_output_data(name).download(local_path)`` copies the step's output into
``local_path/<path_on_datastore>/``.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from azureml._prsd.unsupported import Surface
from prsd.azure.watch import (
    ENDED,
    Tail,
    azure_status,
    logs_folder,
    pipeline_status,
    read_json,
    result_file,
    step_states,
    step_tails,
)
from prsd.spool.layout import JobLayout, SpoolLayout

if TYPE_CHECKING:
    import subprocess

    from azureml._prsd.pipeline_yaml import Draft
    from azureml.core.experiment import Experiment

POLL_S = 1.0


class ActivityFailedException(Exception):
    """``wait_for_completion(raise_on_error=True)`` of a run that did not finish."""


def _say(text: str = "") -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


class PortDataReference(Surface):
    """A step's output: ``download(local_path)`` and ``path_on_datastore``."""

    def __init__(self, step: StepRun, name: str, folder: Path, datastore_name: str) -> None:
        self.name = self.data_reference_name = name
        self.datastore_name = datastore_name
        self.path_on_datastore = f"azureml/{step.id}/{name}"
        self._folder = folder

    def download(
        self, local_path: str, overwrite: bool | None = None, show_progress: bool | None = None
    ) -> str:
        """Copy the output into ``local_path/path_on_datastore``; returns that folder."""
        if not self._folder.exists():
            raise FileNotFoundError(
                f"output {self.name!r} was not written ({self._folder} does not exist)"
            )
        dest = Path(local_path) / self.path_on_datastore
        if self._folder.is_file():
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(self._folder, dest / self._folder.name)
        else:
            shutil.copytree(self._folder, dest, dirs_exist_ok=bool(overwrite) or not dest.exists())
        if show_progress:
            _say(f"Downloaded {self.name} to {dest}")
        return str(dest)


class StepRun(Surface):
    """One step of a pipeline run: a prsd job."""

    def __init__(self, pipeline_run: PipelineRun, name: str, key: str) -> None:
        self.parent = pipeline_run
        self.name = name
        self._key = key

    @property
    def id(self) -> str:
        return str(self.parent._step_record(self._key).get("job_id", ""))

    @property
    def _job(self) -> Path:
        return SpoolLayout(self.parent._spool).job(self.id).root

    def get_status(self) -> str:
        return azure_status(self.parent._step_states().get(self._key, ("Waiting", ""))[0])

    def get_details(self) -> dict[str, Any]:
        state, reason = self.parent._step_states().get(self._key, ("Waiting", ""))
        logs = logs_folder(self._job)
        files = (
            {p.relative_to(logs).as_posix(): str(p) for p in logs.rglob("*.txt")}
            if logs.is_dir()
            else {}
        )
        return {"runId": self.id, "status": azure_status(state), "prsdState": state,
                "reason": reason, "jobFolder": str(self._job), "logFiles": files}  # fmt: skip

    def get_file_names(self) -> list[str]:
        return sorted(
            p.relative_to(self._job).as_posix() for p in self._job.rglob("*") if p.is_file()
        )

    def download_file(
        self, name: str, output_file_path: str | None = None, _validate_checksum: bool = False
    ) -> None:
        target = Path(output_file_path or Path(name).name)
        if target.is_dir():
            target = target / Path(name).name
        shutil.copyfile(self._job / name, target)

    def get_output_data(self, name: str) -> PortDataReference:
        """The step's output ``name`` (a ``PipelineData`` or ``OutputFileDatasetConfig`` name)."""
        found = self.parent._draft.outputs.get(name)
        if found is None or found[0] != self._key:
            raise KeyError(f"step {self.name!r} has no output {name!r}")
        folder = JobLayout(self._job, self.id).outputs / name
        return PortDataReference(self, name, folder, self.parent._datastore)

    def wait_for_completion(self, show_output: bool = True, timeout_seconds: int = sys.maxsize,
                            raise_on_error: bool = True) -> str:  # fmt: skip
        return self.parent.wait_for_completion(show_output, timeout_seconds, raise_on_error)

    def __repr__(self) -> str:
        return f"StepRun(name={self.name!r}, id={self.id!r}, status={self.get_status()!r})"


class PipelineRun(Surface):
    """A submitted pipeline: ``pipelines/<id>`` in the spool."""

    def __init__(self, experiment: Experiment, run_id: str, draft: Draft, spool: Path, file: Path,
                 datastore: str, process: subprocess.Popen[bytes] | None = None) -> None:  # fmt: skip
        self.experiment = experiment
        self.id = run_id
        self._draft = draft
        self._spool = spool
        self._file = file
        self._datastore = datastore
        self._process = process

    @property
    def _folder(self) -> Path:
        return SpoolLayout(self._spool).pipeline(self.id).root

    def _step_record(self, key: str) -> dict[str, Any]:
        record = read_json(SpoolLayout(self._spool).pipeline(self.id).record) or {}
        step = (record.get("steps") or {}).get(key)
        return step if isinstance(step, dict) else {}

    def _step_states(self) -> dict[str, tuple[str, str]]:
        return step_states(self._spool, self._folder)

    def get_status(self) -> str:
        status = pipeline_status(self._spool, self._folder)
        if status not in ENDED and self._process is not None and self._process.poll() is not None:
            return "Failed"  # the background prsd run ended without a result
        return status

    def get_details(self) -> dict[str, Any]:
        final = read_json(SpoolLayout(self._spool).pipeline(self.id).final) or {}
        return {
            "runId": self.id,
            "status": self.get_status(),
            "reason": final.get("reason", ""),
            "properties": {"pipelineFile": str(self._file), "spool": str(self._spool)},
            "logFiles": {"job_result.txt": str(result_file(self._folder))},
        }

    def get_steps(self) -> list[StepRun]:
        return [StepRun(self, name, key) for name, key in self._draft.names.items()]

    def find_step_run(self, name: str) -> list[StepRun]:
        """The step runs named ``name`` (a list, as Azure's)."""
        key = self._draft.names.get(name)
        return [StepRun(self, name, key)] if key is not None else []

    def wait_for_completion(self, show_output: bool = True, timeout_seconds: int = sys.maxsize,
                            raise_on_error: bool = True) -> str:  # fmt: skip
        """Wait for the end, printing progress as Azure's SDK does; the final status."""
        deadline = time.monotonic() + timeout_seconds
        if show_output:
            _say(f"PipelineRunId: {self.id}")
            _say(f"Pipeline folder: {self._folder}")
        seen: dict[str, str] = {}
        tails: dict[str, list[Tail]] = {}
        status = self.get_status()
        while True:
            if show_output:
                self._show_steps(seen, tails)
            status = self.get_status()
            if status in ENDED or time.monotonic() > deadline:
                break
            time.sleep(POLL_S)
        if show_output:
            self._show_steps(seen, tails)
            _say("")
            _say("PipelineRun Execution Summary")
            _say("==============================")
            _say(f"PipelineRun Status: {status}")
            _say(str({k: v for k, v in self.get_details().items() if k != "logFiles"}))
            _say("")
        if raise_on_error and status != "Finished":
            result = result_file(self._folder)
            text = result.read_text(encoding="utf-8") if result.exists() else status
            raise ActivityFailedException(f"pipeline run {self.id} ended {status}: {text.strip()}")
        return status

    def _show_steps(self, seen: dict[str, str], tails: dict[str, list[Tail]]) -> None:
        states = self._step_states()
        for name, key in self._draft.names.items():
            state = azure_status(states.get(key, ("Waiting", ""))[0])
            job = SpoolLayout(self._spool).job(self._step_record(key).get("job_id", "-")).root
            if state != "NotStarted" and key not in tails:
                _say(f"StepRunId: {job.name}")
                tails[key] = step_tails(job)
            for line in (ln for t in tails.get(key, []) for ln in t.new_lines()):
                _say(line)
            if seen.get(key) != state:
                seen[key] = state
                _say(f"StepRun( {name} ) Status: {state}")
                if state in ENDED:
                    _say("")
                    _say(f"StepRun({name}) Execution Summary")
                    _say("=" * (len(name) + 27))
                    _say(f"StepRun( {name} ) Status: {state}")

    def __repr__(self) -> str:
        return f"PipelineRun(id={self.id!r}, status={self.get_status()!r})"
