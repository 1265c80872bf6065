"""Reading pipeline files: steps, components, bindings, and each bad input's one line."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from prsd.errors import JobSpecError
from prsd.jobspec.checkset import check_overrides
from prsd.jobspec.overrides import parse_override
from prsd.jobspec.pipefile import pipeline_file
from prsd.jobspec.stepjob import Binder, place
from prsd.jobspec.steps import Pipeline, read_pipeline
from prsd.jobspec.yamlsafe import read_yaml
from prsd.pipeline.graph import CycleError, downstream, order
from prsd.pipesubmit import read_with_overrides


def _write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return folder / "pipeline.yml"


def _read(folder: Path, text: str, **more: str) -> Pipeline:
    path = _write(folder, {"pipeline.yml": text, **more})
    return read_pipeline(read_yaml(path), folder)


def _refused(folder: Path, text: str, **more: str) -> str:
    with pytest.raises(JobSpecError) as err:
        _read(folder, text, **more)
    return str(err.value)


def test_order_puts_dependencies_first_and_names_a_cycle() -> None:
    assert order({"c": ["b"], "b": ["a"], "a": [], "d": []}) == ["a", "b", "c", "d"]
    with pytest.raises(CycleError) as err:
        order({"a": ["c"], "b": ["a"], "c": ["b"]})
    assert err.value.path == ["a", "c", "b", "a"]
    assert downstream({"a": [], "b": ["a"], "c": ["b"], "d": []}, ["a"]) == {"b", "c"}


TWO_STEPS = """
type: pipeline
display_name: shown on Azure
inputs:
  raw: {type: uri_file, path: ./data/raw.csv}
  keys: Store,Brand
outputs:
  models: {type: uri_folder, path: azureml://datastores/x/paths/models}
jobs:
  prep:
    type: command
    component: ./comp/prep.yml
    inputs:
      src: ${{parent.inputs.raw}}
      keys: ${{parent.inputs.keys}}
  train:
    type: parallel
    inputs:
      table: {type: mltable, path: "${{parent.jobs.prep.outputs.table}}"}
    outputs:
      models: ${{parent.outputs.models}}
    input_data: ${{inputs.table}}
    task: {code: ./code, entry_script: train.py}
"""
PREP = """
type: command
inputs:
  src: {type: uri_file}
  keys: {type: string}
  level: {type: integer, default: 3}
  extra: {type: uri_folder, optional: true}
outputs:
  table: {type: mltable}
code: ./
environment: {conda_file: ./conda.yaml}
command: >-
  python prep.py --src ${{inputs.src}} --keys ${{inputs.keys}} --level ${{inputs.level}}
  $[[--extra ${{inputs.extra}}]] --out ${{outputs.table}}
"""


def test_every_binding_form_resolves(tmp_path: Path) -> None:
    p = _read(tmp_path, TWO_STEPS, **{"comp/prep.yml": PREP})
    assert list(p.steps) == ["prep", "train"]
    assert p.steps["train"].deps == ("prep",)
    assert p.ignored == ("display_name",)
    spool = tmp_path / "spool" / "jobs"
    binder = Binder(p, {"prep": spool / "p1", "train": spool / "t1"})
    prep = binder.job(p.steps["prep"], "p1", "x-prep")
    assert prep.command is not None
    table = spool / "p1" / "outputs" / "table"
    raw = tmp_path / "data" / "raw.csv"
    assert prep.command["command"] == (
        f"python prep.py --src {raw} --keys Store,Brand --level 3   --out {table}"
    )
    assert prep.command["outputs"] == [{"name": "table", "path": str(table), "type": "mltable"}]
    assert prep.code == tmp_path / "comp"  # the component's folder, made absolute
    body: dict[str, Any] = prep.yaml["jobs"]["prep"]
    # The component's conda file (relative to the component) is copied into the step.
    assert body["task"]["environment"] == {"conda_file": "./environment/conda.yaml"}
    conda = (tmp_path / "comp" / "conda.yaml", "environment.conda_file")
    assert prep.files == {"environment/conda.yaml": conda}
    assert body["mini_batch_size"] == 1 and body["input_data"] == "./command"
    assert prep.yaml["display_name"] == "shown on Azure"  # recorded as ignored by the loader
    train = binder.job(p.steps["train"], "t1", "x-train").yaml["jobs"]["train"]
    assert train["inputs"]["table"] == {"type": "mltable", "path": str(table)}
    assert train["outputs"]["models"] == {
        "type": "uri_folder",
        "path": "azureml://datastores/x/paths/models",
    }
    assert binder.output_path("train", "models") == spool / "t1" / "outputs" / "models"


def test_output_places() -> None:
    root = Path("/s/jobs/j")
    assert place(root, "o", {"type": "uri_folder"}) == root / "outputs" / "o"
    assert place(root, "o", {"type": "uri_file", "path": "azureml://x/y/m.pkl"}) == (
        root / "outputs" / "o" / "m.pkl"
    )
    assert place(root, "o", {"path": "./mine"}) == root / "mine"
    assert place(root, "o", {"path": "/data/out"}) == Path("/data/out")


BASE = """
type: pipeline
jobs:
  a:
    type: command
    command: echo a
    outputs: {o: {type: uri_folder}}
"""


@pytest.mark.parametrize(
    ("step", "key", "problem"),
    [
        ("  b: {type: sweep}", "jobs.b.type", "a sweep step is not supported"),
        ("  b: {type: spark}", "jobs.b.type", "a spark step is not supported"),
        ("  b: {type: pipeline}", "jobs.b.type", "a pipeline step is not supported"),
        (
            "  b: {type: command, command: x, inputs: {i: '${{parent.jobs.c.outputs.o}}'}}",
            "jobs.b.inputs.i",
            "there is no step 'c'",
        ),
        (
            "  b: {type: command, command: x, inputs: {i: '${{parent.jobs.a.outputs.p}}'}}",
            "jobs.b.inputs.i",
            "step 'a' has no output 'p' (it has: o)",
        ),
        (
            "  b: {type: command, command: x, inputs: {i: '${{parent.inputs.nope}}'}}",
            "jobs.b.inputs.i",
            "is not declared in the pipeline's inputs:",
        ),
        ("  b: {type: command, component: ./none.yml}", "jobs.b.component", "does not exist"),
        ("  b: {type: command, component: ./bad.yml}", "jobs.b.component", "cannot read"),
        ("  b: {type: command, component: ./par.yml}", "jobs.b.component", "of type 'parallel'"),
        ("  b: {type: command, command: x, distribution: {type: mpi}}", "jobs.b.distribution",
         "distributed command steps"),
        ("  b: {type: command, comand: x}", "jobs.b.comand", "(did you mean 'command'?)"),
    ],
)  # fmt: skip
def test_bad_steps_name_file_step_and_key(
    tmp_path: Path, step: str, key: str, problem: str
) -> None:
    text = _refused(
        tmp_path,
        BASE + step + "\n",
        **{"bad.yml": "a: [unclosed\n", "par.yml": "type: parallel\n"},
    )
    assert text.startswith(f"{tmp_path / 'pipeline.yml'}:")
    assert f": {key}: " in text and problem in text


def test_cycle_and_two_writers_are_refused(tmp_path: Path) -> None:
    cycle = """
    type: pipeline
    jobs:
      a: {type: command, command: x, inputs: {i: '${{parent.jobs.b.outputs.o}}'}, outputs: {o: {}}}
      b: {type: command, command: x, inputs: {i: '${{parent.jobs.a.outputs.o}}'}, outputs: {o: {}}}
    """
    assert "jobs.a: the steps depend on each other in a cycle: a -> b -> a" in _refused(
        tmp_path / "c", cycle
    )
    shared = """
    type: pipeline
    outputs: {res: {type: uri_folder}}
    jobs:
      a: {type: command, command: x, outputs: {o: '${{parent.outputs.res}}'}}
      b: {type: command, command: x, outputs: {p: '${{parent.outputs.res}}'}}
    """
    text = _refused(tmp_path / "s", shared)
    assert "jobs.b.outputs.p: ${{parent.outputs.res}} is also written by jobs.a.outputs.o" in text
    same_path = """
    type: pipeline
    jobs:
      a: {type: command, command: x, outputs: {o: {path: /data/out}}}
      b: {type: command, command: x, outputs: {p: {path: /data/out}}}
    """
    assert "two steps cannot write one output" in _refused(tmp_path / "p", same_path)


def test_set_naming_no_step_is_refused_with_a_suggestion() -> None:
    data = {"type": "pipeline", "jobs": {"score": {}, "prep": {}}}
    check_overrides(data, [parse_override("jobs.score.mini_batch_size=20")])
    with pytest.raises(JobSpecError) as err:
        check_overrides(data, [parse_override("jobs.scor.mini_batch_size=20")])
    assert str(err.value) == (
        "--set: jobs.scor.mini_batch_size: the pipeline has no step 'scor' (did you mean 'score'?)"
    )


def test_which_submissions_run_as_pipelines(tmp_path: Path) -> None:
    one = "type: pipeline\njobs:\n  s: {type: parallel, input_data: ./d}\n"
    two = one + "  t: {type: command, command: x}\n"
    job = "type: parallel\ninput_data: ./d\n"
    _write(tmp_path / "one", {"job.yaml": one, "other.yml": one})
    _write(tmp_path / "two", {"job.yaml": two})
    _write(tmp_path / "job", {"job.yaml": job, "named.yml": job})
    assert pipeline_file(tmp_path / "one") is None  # the single-step form, as before
    assert pipeline_file(tmp_path / "one" / "other.yml") == tmp_path / "one" / "other.yml"
    assert pipeline_file(tmp_path / "two") == tmp_path / "two" / "job.yaml"
    assert pipeline_file(tmp_path / "job") is None
    assert pipeline_file(tmp_path / "job" / "named.yml") is None


def test_set_reaches_pipeline_inputs_and_step_keys_before_the_check(tmp_path: Path) -> None:
    path = _write(tmp_path, {"pipeline.yml": TWO_STEPS, "comp/prep.yml": PREP})
    doc = read_with_overrides(
        path, ["inputs.raw.path=/mnt/new.csv", "jobs.train.mini_batch_size=20"]
    )
    p = read_pipeline(doc, tmp_path)
    binder = Binder(p, {"prep": tmp_path / "p1", "train": tmp_path / "t1"})
    prep = binder.job(p.steps["prep"], "p1", "x-prep")
    assert prep.command is not None and "--src /mnt/new.csv " in prep.command["command"]
    assert binder.job(p.steps["train"], "t1", "x").yaml["jobs"]["train"]["mini_batch_size"] == 20
    assert doc.line_of("jobs.train.mini_batch_size") == doc.line_of("jobs.train")
    with pytest.raises(JobSpecError) as err:
        read_with_overrides(path, ["jobs.trian.mini_batch_size=20"])
    assert "(did you mean 'train'?)" in str(err.value)
