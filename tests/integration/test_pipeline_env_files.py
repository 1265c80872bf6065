"""Conda files by path in a pipeline's steps, as Azure's CLI pipelines name them:
``environment.conda_file: ./prep/conda.yml`` in a command step, in a command component
(relative to the component's file) and in a parallel step's ``task.environment``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from tests.jobkit import prsctl
from tests.pipekit import run_pipeline, spool_entries

FIXTURES = Path(__file__).resolve().parent.parent / "pipelines"


def _fixture(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES / "conda_by_path", tmp_path / "cbp")
    return tmp_path / "cbp"


def test_command_steps_conda_files_are_copied_into_the_steps_and_built(tmp_path: Path) -> None:
    folder = _fixture(tmp_path)
    r = run_pipeline(folder / "pipeline.yml", tmp_path / "spool")
    assert r.returncode == 0, r.stdout + r.stderr
    prep = r.step_job("prep")
    count = r.step_job("count")
    conda = (folder / "prep" / "conda.yml").read_text()
    assert (prep / "environment" / "conda.yml").read_text() == conda
    component_conda = (folder / "components" / "count_conda.yml").read_text()
    assert (count / "environment" / "count_conda.yml").read_text() == component_conda
    spec = json.loads((prep / "spec.json").read_text())
    assert spec["build_environment"]["conda_file"] == conda
    assert "prepared 4 files" in (prep / "logs" / "user" / "std_log.txt").read_text()
    assert r.final()["state"] == "Completed"


def test_the_step_keeps_its_copy_when_the_users_file_changes(tmp_path: Path) -> None:
    """Copied at submit, like code: a later edit of the user's file changes nothing queued."""
    folder = _fixture(tmp_path)
    spool = tmp_path / "spool"
    submitted = prsctl(spool, "submit", str(folder / "pipeline.yml"))
    assert submitted.returncode == 0, submitted.stderr
    pid = submitted.stdout.strip().splitlines()[0].split()[-1]
    original = (folder / "prep" / "conda.yml").read_text()
    (folder / "prep" / "conda.yml").write_text("dependencies: [python=3.11, numpy]\n")
    copy = spool / "pipelines" / pid / "steps" / "prep" / "environment" / "conda.yml"
    assert copy.read_text() == original


def test_a_missing_conda_file_is_named_at_the_key_the_user_wrote(tmp_path: Path) -> None:
    folder = _fixture(tmp_path)
    (folder / "prep" / "conda.yml").unlink()
    r = run_pipeline(folder / "pipeline.yml", tmp_path / "spool")
    assert r.returncode == 2, r.stdout + r.stderr
    where = f"{folder / 'pipeline.yml'}:15"
    assert r.stderr.strip() == (
        f"daemon.py: error: {where}: jobs.prep.environment.conda_file: "
        f"{folder / 'prep' / 'conda.yml'} is not a file"
    )
    assert spool_entries(tmp_path / "spool")["jobs"] == []


def test_a_bad_conda_file_names_the_users_file_not_the_steps_copy(tmp_path: Path) -> None:
    folder = _fixture(tmp_path)
    (folder / "prep" / "conda.yml").write_text("dependencies: [python=3.11, {pip: 3}]\n")
    r = run_pipeline(folder / "pipeline.yml", tmp_path / "spool")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.startswith(
        f"daemon.py: error: {folder / 'pipeline.yml'}:15: jobs.prep.environment.conda_file: "
        f"{folder / 'prep' / 'conda.yml'}: a dependency must be"
    ), r.stderr
    assert "leaves the job folder" not in r.stderr


def test_notes_say_note_once_and_nothing_of_stand_ins(tmp_path: Path) -> None:
    """A step reading an upstream uri_folder is checked against a stand-in at submit; what
    the stand-in holds is not the step's, and a plain note is not ``note: note:``."""
    folder = _fixture(tmp_path)
    submitted = prsctl(tmp_path / "spool", "submit", str(folder / "pipeline.yml"))
    assert submitted.returncode == 0, submitted.stderr
    assert "note: note:" not in submitted.stderr
    assert "prsd-standin" not in submitted.stderr
    assert "prsctl: note: not used: jobs.score.compute" in submitted.stderr
    image = "'mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu20.04' is not used"
    # Each step's image named where that step names it.
    assert f"prsctl: note: environment: environment.image {image}" in submitted.stderr
    assert f"prsctl: note: environment: task.environment.image {image}" in submitted.stderr


def test_a_parallel_steps_conda_file_travels_in_its_job_file(tmp_path: Path) -> None:
    """``task.environment.conda_file`` relative to the pipeline, even outside its folder
    (``../shared/conda.yml``, as Azure allows), is read at submit into the step's job
    file: the leader never reads the user's folder for it, and a later edit changes
    nothing queued."""
    folder = _fixture(tmp_path)
    (tmp_path / "shared").mkdir()
    shared = "name: shared-env\ndependencies:\n  - python=3.11\n  - pip\n"
    (tmp_path / "shared" / "conda.yml").write_text(shared)
    text = (folder / "pipeline.yml").read_text()
    (folder / "pipeline.yml").write_text(text.replace("./score/conda.yml", "../shared/conda.yml"))
    spool = tmp_path / "spool"
    submitted = prsctl(spool, "submit", str(folder / "pipeline.yml"))
    assert submitted.returncode == 0, submitted.stderr
    pid = submitted.stdout.strip()
    (tmp_path / "shared" / "conda.yml").write_text("dependencies: [python=3.11, numpy]\n")
    job = yaml.safe_load((spool / "pipelines" / pid / "steps" / "score" / "job.yaml").read_text())
    carried = job["jobs"]["score"]["task"]["environment"]["conda_file"]
    assert carried == yaml.safe_load(shared)


def test_a_parallel_steps_missing_conda_file_is_named_at_its_key(tmp_path: Path) -> None:
    folder = _fixture(tmp_path)
    (folder / "score" / "conda.yml").unlink()
    r = run_pipeline(folder / "pipeline.yml", tmp_path / "spool")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == (
        f"daemon.py: error: {folder / 'pipeline.yml'}:43: jobs.score.task.environment.conda_file: "
        f"{folder / 'score' / 'conda.yml'} is not a file"
    )


PARALLEL_COMPONENT = """
$schema: https://azuremlschemas.azureedge.net/latest/parallelComponent.schema.json
type: parallel
name: score_files
version: 1
inputs:
  images:
    type: uri_folder
input_data: ${{inputs.images}}
mini_batch_size: "2"
task:
  type: run_function
  code: ./code
  entry_script: score.py
  environment:
    image: mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu20.04
    conda_file: ./conda.yml
"""


def test_a_parallel_components_conda_file_is_read_beside_the_component(tmp_path: Path) -> None:
    """A parallel component in a folder of its own (``../components/score.yml``): its
    ``conda_file: ./conda.yml`` is the component's neighbour, and the step runs."""
    folder = _fixture(tmp_path)
    comp = tmp_path / "components"
    (comp / "code").mkdir(parents=True)
    (comp / "score.yml").write_text(PARALLEL_COMPONENT)
    shutil.copy(folder / "score" / "score.py", comp / "code" / "score.py")
    conda = "name: component-env\ndependencies:\n  - python=3.11\n  - pip\n"
    (comp / "conda.yml").write_text(conda)
    text = (folder / "pipeline.yml").read_text()
    head = text[: text.index("  score:\n")]
    step = (
        "  score:\n    type: parallel\n    component: ../components/score.yml\n"
        "    inputs:\n      images: ${{parent.jobs.prep.outputs.images}}\n"
    )
    (folder / "pipeline.yml").write_text(head + step)
    r = run_pipeline(folder / "pipeline.yml", tmp_path / "spool")
    assert r.returncode == 0, r.stdout + r.stderr
    job = yaml.safe_load((r.step_job("score") / "job.yaml").read_text())
    assert job["jobs"]["score"]["task"]["environment"]["conda_file"] == yaml.safe_load(conda)
    rows = (r.step_job("score") / "spec.json").read_text()
    assert "component-env" in rows
