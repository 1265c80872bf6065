"""Azure v2 YAML as written: inputs, outputs, ${{...}} references, pipelines, real samples."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from prsd.jobspec import JobSpec
from tests.unit.jobspec_cases import (
    assert_error,
    azure_copy,
    iris_folders,
    load,
    load_error,
    make_job,
)

if TYPE_CHECKING:
    from pathlib import Path

V2 = """\
type: parallel
inputs:
  images:
    type: uri_folder
    path: ./images
    mode: ro_mount
  model:
    type: uri_folder
    path: ./model
    mode: download
  target_col: Quantity
  top_k: 5
  verbose: true
  resume_from:
    type: uri_folder
    optional: true
outputs:
  scores:
    type: uri_folder
    mode: rw_mount
input_data: ${{inputs.images}}
task:
  type: run_function
  code: ./src
  entry_script: score.py
  program_arguments: >-
    --model ${{inputs.model}}
    --target_col ${{inputs.target_col}}
    --top_k=${{inputs.top_k}}
    --verbose ${{inputs.verbose}}
    $[[--resume_from ${{inputs.resume_from}}]]
    $[[--missing ${{inputs.not_declared}}]]
    --out ${{ outputs.scores }}
  append_row_to: ${{outputs.scores}}
"""


def test_v2_inputs_outputs_references(tmp_path: Path) -> None:
    """References, literals and optional groups expand; absent groups are dropped."""
    root = make_job(tmp_path / "job", V2, files=("src/score.py",), dirs=("images", "model"))
    spool = tmp_path / "spool"
    spec = load(root, spool=spool)
    assert spec.input.paths == (str(root / "images"),)
    assert spec.input.name == "images"
    assert spec.side_inputs == {"model": str(root / "model")}
    assert spec.program_arguments == (
        "--model",
        str(root / "model"),
        "--target_col",
        "Quantity",
        "--top_k=5",
        "--verbose",
        "True",
        "--out",
        str(spool / "outputs" / "scores"),
    )
    assert spec.outputs == {"scores": str(spool / "outputs" / "scores")}
    assert spec.append_row_to == str(spool / "outputs" / "scores" / "parallel_run_step.txt")
    assert "output scores: it has no path; written to" in spec.notes[0]
    assert spec.ignored == ("inputs.images.mode", "inputs.model.mode", "outputs.scores.mode")


def test_optional_group_kept_when_present(tmp_path: Path) -> None:
    """An optional group whose input has a path is kept, unwrapped."""
    text = V2.replace("    optional: true\n", "    optional: true\n    path: ./ckpt\n")
    root = make_job(tmp_path, text, files=("src/score.py",), dirs=("images", "model", "ckpt"))
    args = load(root).program_arguments
    assert args[args.index("--resume_from") + 1] == str(root / "ckpt")


@pytest.mark.parametrize(
    ("text", "key", "fragment"),
    [
        ("input_data: ${{inputs.nope}}\n", "input_data", "${{inputs.nope}} is not declared"),
        ("input_data: ${{inputs.lit}}\n", "input_data", "is a literal"),
        ("input_data: ${{inputs.empty}}\n", "input_data", "declared without a path"),
        ("input_data: ${{outputs.o}}\n", "input_data", "is an output"),
        ("input_data: ${{name}}\n", "input_data", "not supported by prsd"),
    ],
)
def test_bad_input_data_reference(tmp_path: Path, text: str, key: str, fragment: str) -> None:
    """input_data must reference a declared data input with a path."""
    head = "inputs:\n  lit: 3\n  empty: {type: uri_folder}\noutputs:\n  o: {}\ntask: {entry_script: score.py}\n"
    root = make_job(tmp_path, head + text)
    assert_error(load_error(root), key, root / "job.yaml", "input_data:", fragment)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ("--x ${{inputs.nope}}", "${{inputs.nope}} is not declared"),
        ("--x ${{inputs.empty}}", "has no path or value"),
        ("--x ${{outputs.nope}}", "is not declared; declare it under outputs:"),
        ("$[[--x ${{inputs.empty}}", "has no closing ]]"),
        ("--x ${{parent.inputs.y}}", "can only bind the step's inputs"),
        ("--x ${{parent.jobs.prep.outputs.y}}", "another pipeline step"),
    ],
)
def test_bad_argument_references(tmp_path: Path, args: str, fragment: str) -> None:
    """Undeclared or empty references in program_arguments are errors with the line."""
    text = f"input_data: ./data\ninputs:\n  empty: {{type: uri_folder}}\ntask:\n  entry_script: score.py\n  program_arguments: '{args}'\n"
    root = make_job(tmp_path, text)
    assert_error(
        load_error(root), "task.program_arguments", root / "job.yaml", "program_arguments", fragment
    )


@pytest.mark.parametrize(
    ("entry", "key", "fragment"),
    [
        ("x: {type: uri_folder, path: ./nope}", "inputs.x.path", "does not exist"),
        ("x: {type: uri_folder, path: ../out}", "inputs.x.path", "leaves the job folder"),
        ("x: {type: uri_folder, path: 'azureml:iris:1'}", "inputs.x.path", "cloud location"),
        ("x: {type: uri_foldr, path: ./data}", "inputs.x.type", "did you mean 'uri_folder'"),
        ("x: {type: uri_folder, pth: ./data}", "inputs.x.pth", "did you mean 'path'"),
        ("bad-name: 1", "inputs.bad-name", "names must be letters"),
        ("x: [1, 2]", "inputs.x", "a literal or a mapping"),
    ],
)
def test_bad_input_declarations(tmp_path: Path, entry: str, key: str, fragment: str) -> None:
    """Bad input declarations name the input's key and line."""
    root = make_job(
        tmp_path / "job",
        f"input_data: ./data\ntask: {{entry_script: score.py}}\ninputs:\n  {entry}\n",
    )
    needle = entry.split(":")[0]
    assert_error(load_error(root), key, root / "job.yaml", f"  {needle}", fragment)


@pytest.mark.parametrize(
    ("output", "kind", "expected"),
    [
        ("{type: uri_folder}", "folder", "outputs/o"),
        ("{type: uri_file}", "file", "outputs/o"),
        (
            "{type: uri_file, path: 'azureml://datastores/ws/paths/${{name}}/preds.csv'}",
            "file",
            "outputs/o/preds.csv",
        ),
        (
            "{type: uri_folder, path: 'https://acct.blob.core.windows.net/c/dir'}",
            "folder",
            "outputs/o",
        ),
        ("{type: uri_file, path: ./results/preds.csv}", "file", "results/preds.csv"),
        ("{type: uri_folder, path: 'file:./results'}", "folder", "results"),
        ("", "folder", "outputs/o"),
    ],
)
def test_output_places(tmp_path: Path, output: str, kind: str, expected: str) -> None:
    """Outputs resolve in the spool folder; cloud or missing paths go under outputs/<name>."""
    text = f"input_data: ./data\noutputs:\n  o: {output}\ntask:\n  entry_script: score.py\n  append_row_to: ${{{{outputs.o}}}}\n"
    spool = tmp_path / "spool"
    spec = load(make_job(tmp_path / "job", text), spool=spool)
    assert spec.outputs == {"o": str(spool / expected)}
    suffix = "" if kind == "file" else "/parallel_run_step.txt"
    assert spec.append_row_to == str(spool / expected) + suffix
    local = "./results" in output or "file:" in output
    assert any(n.startswith("redirected: output o:") for n in spec.notes) != local


def test_output_absolute_outside_roots(tmp_path: Path) -> None:
    """An absolute output path outside the allowed roots is refused."""
    text = f"input_data: ./data\noutputs:\n  o: {{path: {tmp_path}/elsewhere}}\ntask: {{entry_script: score.py}}\n"
    root = make_job(tmp_path / "job", text)
    err = load_error(root, roots=(tmp_path / "job",))
    assert_error(err, "outputs.o.path", root / "job.yaml", "  o:", "outside the allowed roots")


def test_literal_bound_to_setting(tmp_path: Path) -> None:
    """A setting written as ${{inputs.x}} takes the literal input's value."""
    text = "input_data: ./data\ninputs:\n  nodes: 3\nresources:\n  instance_count: ${{inputs.nodes}}\nenvironment_variables: {N: '${{inputs.nodes}}'}\ntask: {entry_script: score.py}\n"
    spec = load(make_job(tmp_path, text))
    assert spec.instance_count == 3
    assert spec.environment_variables == {"N": "3"}


def test_setting_bound_to_data_input(tmp_path: Path) -> None:
    """A setting bound to a data input (not a literal) is an error."""
    text = "input_data: ./data\ninputs:\n  d: {path: ./data}\nresources:\n  instance_count: ${{inputs.d}}\ntask: {entry_script: score.py}\n"
    root = make_job(tmp_path, text)
    assert_error(
        load_error(root),
        "resources.instance_count",
        root / "job.yaml",
        "instance_count",
        "not a literal input",
    )


def test_literal_input_typed_forms(tmp_path: Path) -> None:
    """Literal inputs may be written as {type: string, default: x} or {type: integer, value: n}."""
    text = """\
    input_data: ./data
    inputs:
      col: {type: string, default: Quantity}
      k: {type: integer, value: 4}
    task:
      entry_script: score.py
      program_arguments: --col ${{inputs.col}} --k ${{inputs.k}}
    """
    assert load(make_job(tmp_path, text)).program_arguments == ("--col", "Quantity", "--k", "4")


def test_side_inputs_and_v2_inputs(tmp_path: Path) -> None:
    """side_inputs and the non-split v2 inputs are both side inputs; names must differ."""
    text = "input_data: ./data\ninputs:\n  m: {path: ./model}\nside_inputs:\n  labels: ./labels\ntask: {entry_script: score.py}\n"
    root = make_job(tmp_path, text, dirs=("data", "model", "labels"))
    assert load(root).side_inputs == {"m": str(root / "model"), "labels": str(root / "labels")}
    clash = text.replace("labels: ./labels", "m: ./labels")
    root2 = make_job(tmp_path / "clash", clash, dirs=("data", "model", "labels"))
    assert_error(
        load_error(root2), "side_inputs.m", root2 / "job.yaml", "  m: ./labels", "already declares"
    )


def test_missing_side_input(tmp_path: Path) -> None:
    """A side input that does not exist is an error naming it."""
    root = make_job(
        tmp_path,
        "input_data: ./data\nside_inputs: {labels: ./nope}\ntask: {entry_script: score.py}\n",
    )
    assert_error(
        load_error(root), "side_inputs.labels", root / "job.yaml", "side_inputs", "does not exist"
    )


def _mltable(root: Path, text: str, files: dict[str, str]) -> Path:
    folder = root / "table"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "MLTable").write_text(text, encoding="utf-8")
    for name, content in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(content, encoding="utf-8")
    return folder


MLTABLE_JOB = "inputs:\n  t: {type: mltable, path: ./table}\ninput_data: ${{inputs.t}}\ntask: {entry_script: score.py}\n"


@pytest.mark.parametrize(
    ("mltable", "files", "fmt", "options"),
    [
        (
            "paths:\n  - file: ./a.csv\ntransformations:\n  - read_delimited:\n      delimiter: ';'\n      header: no_header\n      encoding: latin1\n      include_path_column: true\n",
            {"a.csv": "1;2\n"},
            "csv",
            {
                "delimiter": ";",
                "header": "no_header",
                "encoding": "latin-1",
                "include_path_column": True,
            },
        ),
        (
            "paths:\n  - folder: ./parts\ntransformations:\n  - read_parquet:\n      include_path_column: false\n",
            {"parts/p0.parquet": ""},
            "parquet",
            {"include_path_column": False},
        ),
        (
            "paths:\n  - file: ./a.jsonl\ntransformations:\n  - read_json_lines:\n      encoding: utf8bom\n      invalid_lines: error\n",
            {"a.jsonl": "{}\n"},
            "jsonl",
            {"encoding": "utf-8-sig"},
        ),
        ("paths:\n  - folder: ./imgs\n", {"imgs/1.png": ""}, "files", {}),
    ],
)
def test_mltable_formats(
    tmp_path: Path, mltable: str, files: dict[str, str], fmt: str, options: dict[str, object]
) -> None:
    """An MLTable's first read transformation sets the format and reader options."""
    root = make_job(tmp_path, MLTABLE_JOB)
    _mltable(root, mltable, files)
    spec = load(root)
    assert spec.input.format == fmt
    for name, value in options.items():
        assert getattr(spec.input, name) == value


def test_mltable_paths_order_and_pattern(tmp_path: Path) -> None:
    """file, folder and pattern entries resolve in order; a pattern is sorted and skips MLTable."""
    root = make_job(tmp_path, MLTABLE_JOB)
    text = "paths:\n  - file: ./z.csv\n  - pattern: ./parts/*.csv\n  - folder: ./more\ntransformations:\n  - read_delimited: {}\n"
    table = _mltable(
        root,
        text,
        {
            "z.csv": "a\n",
            "parts/b.csv": "a\n",
            "parts/a.csv": "a\n",
            "parts/x.txt": "",
            "more/c.csv": "a\n",
        },
    )
    assert load(root).input.paths == (
        str(table / "z.csv"),
        str(table / "parts" / "a.csv"),
        str(table / "parts" / "b.csv"),
        str(table / "more"),
    )


def test_mltable_inferred_from_plain_folder(tmp_path: Path) -> None:
    """A plain input_data folder holding an MLTable file is read as that MLTable."""
    root = make_job(tmp_path, "input_data: ./table\ntask: {entry_script: score.py}\n")
    _mltable(
        root,
        "paths:\n  - file: ./a.csv\ntransformations:\n  - read_delimited: {}\n",
        {"a.csv": "a\n"},
    )
    spec = load(root)
    assert (spec.input.format, spec.input.paths) == ("csv", (str(root / "table" / "a.csv"),))


def test_mltable_transformations_become_steps(tmp_path: Path) -> None:
    """Transformations after the reader are kept in order as steps, none dropped."""
    root = make_job(tmp_path, MLTABLE_JOB)
    text = (
        "paths:\n  - file: ./a.csv\ntransformations:\n  - read_delimited: {}\n  - take: 5\n"
        "  - drop_columns: [x]\n  - filter: 'col(\"a\") >= 2.5'\n"
    )
    _mltable(root, text, {"a.csv": "a\n"})
    spec = load(root)
    assert spec.input.steps == (
        {"op": "take", "count": 5},
        {"op": "drop_columns", "columns": ["x"]},
        {"op": "filter", "column": "a", "cmp": ">=", "value": 2.5},
    )
    assert JobSpec.from_json(spec.to_json()).input == spec.input


@pytest.mark.parametrize(
    ("step", "fragment"),
    [
        ("  - random_split: {percent: 0.5}", "transformation random_split in "),
        ('  - filter: \'col("a") > 1 and col("b") < 2\'', "one comparison of a column"),
        ("  - convert_column_types:\n      - {columns: a, column_type: {datetime: {}}}", "simple"),
        ("  - take: -1", "take"),
    ],
)
def test_mltable_transformation_not_applied_is_an_error(
    tmp_path: Path, step: str, fragment: str
) -> None:
    """A transformation prsd cannot apply is an error naming it and the MLTable file."""
    root = make_job(tmp_path, MLTABLE_JOB)
    text = f"paths:\n  - file: ./a.csv\ntransformations:\n  - read_delimited: {{}}\n{step}\n"
    _mltable(root, text, {"a.csv": "a\n"})
    message = str(load_error(root))
    assert fragment in message and "MLTable" in message, message


@pytest.mark.parametrize(
    ("mltable", "key", "fragment"),
    [
        ("paths:\n  - file: ./missing.csv\n", "paths[0].file", "does not exist"),
        ("paths:\n  - file: ../escape.csv\n", "paths[0].file", "leaves the MLTable folder"),
        ("paths:\n  - pattern: ./*.nothing\n", "paths[0].pattern", "matches no file"),
        ("paths:\n  - pattern: ../*.csv\n", "paths[0].pattern", "'..' is not accepted"),
        ("paths:\n  - file: https://x/iris.csv\n", "paths[0].file", "cloud location"),
        ("paths:\n  - fil: ./a.csv\n", "paths[0]", "did you mean 'file'"),
        ("paths: []\n", "paths", "expected a list"),
        ("transformations: []\n", "", "paths: required"),
        ("", "", "the MLTable file is empty"),
        (
            "paths:\n  - file: ./a.csv\ntransformations:\n  - read_delta_lake: {version_as_of: 1}\n",
            "transformations[0]",
            "Delta Lake",
        ),
        (
            "paths:\n  - file: ./a.csv\ntransformations:\n  - read_delimited: {encoding: ebcdic}\n",
            "transformations[0].read_delimited.encoding",
            "expected one of",
        ),
        (
            "paths:\n  - file: ./a.csv\ntransformations:\n  - read_delimited: {header: some}\n",
            "transformations[0].read_delimited.header",
            "from_first_file",
        ),
        (
            "paths:\n  - file: ./a.csv\ntransformations:\n  - read_delimited: {delimiter: '::'}\n",
            "transformations[0].read_delimited.delimiter",
            "one character",
        ),
        (
            "paths:\n  - file: ./a.csv\ntransformations:\n  - read_delimited: {support_multi_line: 2}\n",
            "transformations[0].read_delimited.support_multi_line",
            "expected true or false",
        ),
        (
            "paths:\n  - file: ./a.csv\ntransformations:\n  - read_delimited: {delimitr: ','}\n",
            "transformations[0].read_delimited.delimitr",
            "did you mean 'delimiter'",
        ),
        ("a: &x 1\nb: *x\n", "", "anchors and aliases"),
    ],
)
def test_bad_mltable(tmp_path: Path, mltable: str, key: str, fragment: str) -> None:
    """MLTable problems are located in the MLTable file, with its key and line."""
    root = make_job(tmp_path / "job", MLTABLE_JOB)
    table = _mltable(root, mltable, {"a.csv": "a\n"})
    (tmp_path / "job" / "escape.csv").write_text("a\n", encoding="utf-8")
    err = load_error(root)
    assert err.key == key, str(err)
    assert err.location.startswith(f"{table / 'MLTable'}:"), str(err)
    assert fragment in err.problem, str(err)


def test_mltable_input_without_mltable_file(tmp_path: Path) -> None:
    """An mltable input whose folder has no MLTable file is an error."""
    root = make_job(tmp_path, MLTABLE_JOB, dirs=("table",))
    assert_error(
        load_error(root), "input_data", root / "job.yaml", "input_data", "holds no MLTable file"
    )


def test_mltable_format_conflict(tmp_path: Path) -> None:
    """An input_format that disagrees with the MLTable's reader is an error naming both."""
    root = make_job(tmp_path, MLTABLE_JOB + "input_format: parquet\n")
    _mltable(
        root,
        "paths:\n  - file: ./a.csv\ntransformations:\n  - read_delimited: {}\n",
        {"a.csv": "a\n"},
    )
    assert_error(load_error(root), "input_format", root / "job.yaml", "input_format", "reads csv")


@pytest.mark.parametrize(
    ("files", "expected", "delimiter"),
    [
        (("a.csv",), "csv", ","),
        (("a.tsv",), "csv", "\t"),
        (("a.parquet",), "parquet", ","),
        (("a.jsonl",), "jsonl", ","),
        (("a.CSV", "b.csv"), "csv", ","),
        (("a.csv", "b.jsonl"), "files", ","),
        (("a.png",), "files", ","),
    ],
)
def test_format_inferred_from_files(
    tmp_path: Path, files: tuple[str, ...], expected: str, delimiter: str
) -> None:
    """Plain file inputs with one tabular extension are read as that format."""
    listed = ", ".join(f"./{f}" for f in files)
    root = make_job(
        tmp_path,
        f"input_data: [{listed}]\ntask: {{entry_script: score.py}}\n",
        files=("score.py", *files),
    )
    spec = load(root)
    assert (spec.input.format, spec.input.delimiter) == (expected, delimiter)


def test_uri_file_csv_stays_files(tmp_path: Path) -> None:
    """A declared uri_file input is a file list, as Azure hands it to run()."""
    text = "inputs:\n  d: {type: uri_file, path: ./a.csv}\ninput_data: ${{inputs.d}}\ntask: {entry_script: score.py}\n"
    root = make_job(tmp_path, text, files=("score.py", "a.csv"))
    assert load(root).input.format == "files"


def test_explicit_format_wins(tmp_path: Path) -> None:
    """input_format overrides the inference."""
    root = make_job(
        tmp_path, "input_data: ./data\ninput_format: jsonl\ntask: {entry_script: score.py}\n"
    )
    assert load(root).input.format == "jsonl"


def test_partition_keys_files(tmp_path: Path) -> None:
    """A files input is partitioned by keys named in partition_format."""
    text = "input_data: ./data\npartition_keys: [user, genre]\npartition_format: '{user}/{season}/{genre}.wav'\ntask: {entry_script: score.py}\n"
    spec = load(make_job(tmp_path, text))
    assert spec.partition_keys == ("user", "genre")
    assert spec.input.partition_format == "{user}/{season}/{genre}.wav"


@pytest.mark.parametrize(
    ("text", "key", "fragment"),
    [
        (
            "partition_keys: [user, mood]\npartition_format: '{user}/{genre}.wav'\n",
            "partition_keys[1]",
            "does not appear",
        ),
        (
            "partition_keys: [user, user]\npartition_format: '{user}.wav'\n",
            "partition_keys[1]",
            "listed twice",
        ),
        ("partition_format: '{user}.wav'\n", "partition_format", "needs partition_keys"),
        (
            "input_format: csv\npartition_keys: [a]\npartition_format: '{a}.csv'\n",
            "partition_format",
            "files inputs only",
        ),
    ],
)
def test_bad_partitioning(tmp_path: Path, text: str, key: str, fragment: str) -> None:
    """Partition keys and format must fit each other and the input."""
    root = make_job(tmp_path, "input_data: ./data\ntask: {entry_script: score.py}\n" + text)
    needle = "partition_keys" if key.startswith("partition_keys") else key
    err = load_error(root)
    assert err.key == key and fragment in err.problem, str(err)
    assert err.location.startswith(f"{root / 'job.yaml'}:")
    assert needle


def test_partition_keys_tabular_note_mini_batch_size(tmp_path: Path) -> None:
    """With partition_keys, mini_batch_size is not used, and a note says so."""
    text = "input_data: ./a.csv\npartition_keys: [store]\nmini_batch_size: 1kb\ntask: {entry_script: score.py}\n"
    spec = load(make_job(tmp_path, text, files=("score.py", "a.csv")))
    assert spec.partition_keys == ("store",)
    assert any("partition_keys make one mini-batch per key group" in n for n in spec.notes)


PIPELINE = """\
type: pipeline
name: nightly
settings: {default_compute: azureml:cpu}
inputs:
  data: {type: uri_folder, path: ./data}
  nodes: 3
outputs:
  preds: {type: uri_file}
jobs:
  score:
    type: parallel
    inputs:
      images: ${{parent.inputs.data}}
    outputs:
      out: ${{parent.outputs.preds}}
    resources:
      instance_count: ${{parent.inputs.nodes}}
    input_data: ${{inputs.images}}
    task:
      entry_script: score.py
      append_row_to: ${{outputs.out}}
"""


def test_pipeline_with_one_parallel_job(tmp_path: Path) -> None:
    """A pipeline holding one parallel job loads it, with parent bindings resolved."""
    spool = tmp_path / "spool"
    root = make_job(tmp_path / "job", PIPELINE)
    spec = load(root, spool=spool)
    assert spec.name == "nightly"
    assert spec.input.paths == (str(root / "data"),)
    assert spec.instance_count == 3
    assert spec.append_row_to == str(spool / "outputs" / "out")
    assert "settings" in spec.ignored


@pytest.mark.parametrize(
    ("change", "key", "fragment"),
    [
        (
            ("jobs:\n", "jobs:\n  prep:\n    type: command\n"),
            "jobs.prep",
            "also has: prep (command)",
        ),
        (("jobs:\n", "jobs:\n  other:\n    type: parallel\n"), "jobs", "found other, score"),
        (
            ("    type: parallel\n", "    type: parallel\n    component: ./c.yml\n"),
            "jobs.score.component",
            "component",
        ),
        (
            ("images: ${{parent.inputs.data}}", "images: ${{parent.inputs.nope}}"),
            "jobs.score.inputs.images",
            "is not declared",
        ),
        (("jobs:\n  score:", "jobz:\n  score:"), "jobz", "did you mean 'jobs'"),
        (
            ("    resources:\n", "    retry_settings: {timeout: -1}\n    resources:\n"),
            "jobs.score.retry_settings.timeout",
            "(0, 259200]",
        ),
    ],
)
def test_bad_pipeline(tmp_path: Path, change: tuple[str, str], key: str, fragment: str) -> None:
    """Pipelines with other steps, several parallel steps or bad bindings are errors naming them."""
    root = make_job(tmp_path, PIPELINE.replace(*change))
    err = load_error(root)
    assert err.key == key and fragment in err.problem, str(err)
    assert err.location.startswith(f"{root / 'job.yaml'}:")


def test_real_iris_pipeline_inline(tmp_path: Path) -> None:
    """azureml-examples' iris pipeline.yml (inline parallel job) loads unchanged."""
    root = azure_copy(tmp_path / "job", "iris_pipeline_inline.yml")
    iris_folders(root)
    spool = tmp_path / "spool"
    spec = load(root, spool=spool)
    assert spec.input.format == "csv"
    assert spec.input.paths == (str(root / "neural-iris-mltable" / "iris.csv"),)
    assert spec.mini_batch_size == 10 * 1024
    assert (spec.instance_count, spec.max_concurrency_per_instance) == (2, 2)
    assert (spec.logging_level, spec.mini_batch_error_threshold) == ("DEBUG", 5)
    assert spec.item_error_threshold == 5
    assert spec.allowed_failed_percent == 30.0
    assert spec.task_overhead_timeout_s == 1200.0
    assert spec.progress_update_timeout_s == 600.0
    assert spec.code_dir == str(root / "script")
    assert spec.program_arguments[:2] == ("--model", str(root / "iris-model"))
    assert spec.append_row_to == str(spool / "outputs" / "job_output_file")
    assert spec.resource_monitor_interval_s == 600.0
    assert any("--resource_monitor_interva is passed to the script" in n for n in spec.notes)
    assert "jobs.batch_prediction.task.program_arguments --copy_logs_to_parent" in spec.ignored
    assert "jobs.batch_prediction.task.environment.name" in spec.ignored
    assert spec.build_environment["source"] == "./environment/environment_parallel.yml"
    assert "python=3.8" in spec.build_environment["conda_file"]
    assert spec.build_environment["image"] == "mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu20.04"


def test_real_iris_pipeline_with_parent_bindings(tmp_path: Path) -> None:
    """The older iris pipeline.yml (pipeline inputs, type: function, args:) loads unchanged."""
    root = azure_copy(tmp_path / "job", "iris_pipeline_parent.yml")
    iris_folders(root)
    spec = load(root, spool=tmp_path / "spool")
    assert spec.input.format == "csv"
    assert spec.mini_batch_size == 100 * 1024
    assert spec.program_arguments == ("--model", str(root / "iris-model"))
    assert spec.side_inputs == {"score_model": str(root / "iris-model")}
    assert spec.append_row_to == str(tmp_path / "spool" / "outputs" / "job_output_file")


def test_real_iris_2a_pipeline(tmp_path: Path) -> None:
    """azureml-examples' 2a pipeline.yml (azureml:// output) loads unchanged."""
    root = azure_copy(tmp_path / "job", "iris_2a_pipeline.yml")
    iris_folders(root)
    spool = tmp_path / "spool"
    spec = load(root, spool=spool)
    expected = spool / "outputs" / "job_output_file" / "aggregated_returns.csv"
    assert spec.append_row_to == str(expected)
    assert spec.environment_variables == {"AZUREML_PARALLEL_EXAMPLE": "2a_yaml"}
    assert spec.resource_monitor_interval_s == 20.0
    assert spec.item_error_threshold == 5
    assert any("is not a local path" in n and str(expected) in n for n in spec.notes)
    assert JobSpec.from_json(spec.to_json()) == spec


@pytest.mark.parametrize(
    ("name", "key", "fragment"),
    [
        ("oj_sales_1a_pipeline.yml", "jobs.partition_job", "partition_job (command)"),
        ("mnist_3a_pipeline.yml", "jobs.prepare_data", "prepare_data (command)"),
        ("sdk_tabular_e2e.yml", "inputs.job_data_path.path", "leaves the job folder"),
        ("parallel_component_2a.yml", "input_data", "declared without a path"),
    ],
)
def test_real_azure_yaml_errors(tmp_path: Path, name: str, key: str, fragment: str) -> None:
    """Real Azure YAML that cannot run locally fails with the reason and the line."""
    root = azure_copy(tmp_path / "job", name)
    iris_folders(root)
    err = load_error(root)
    assert err.key == key and fragment in err.problem, str(err)
    assert err.location.startswith(f"{root / 'job.yaml'}:")


def test_mltable_file_symlink_outside(tmp_path: Path) -> None:
    """An MLTable file that is a symlink out of its folder is not read."""
    secret = tmp_path / "secret.yaml"
    secret.write_text("paths:\n  - file: ./a.csv\n", encoding="utf-8")
    root = make_job(tmp_path / "job", MLTABLE_JOB, dirs=("table",))
    (root / "table" / "MLTable").symlink_to(secret)
    err = load_error(root)
    assert err.location == str(root / "table" / "MLTable")
    assert "symlink leading outside" in err.problem


def test_reference_inside_longer_input_path(tmp_path: Path) -> None:
    """A reference inside a longer input_data string becomes the input's absolute path."""
    text = "inputs:\n  d: {path: ./data}\ninput_data: ${{inputs.d}}/2024\ntask: {entry_script: score.py}\n"
    root = make_job(tmp_path, text, dirs=("data/2024",))
    spec = load(root)
    assert spec.input.paths == (str(root / "data" / "2024"),)
    assert spec.side_inputs == {"d": str(root / "data")}


def test_group_without_references_is_kept(tmp_path: Path) -> None:
    """An optional group that references nothing is kept."""
    text = "input_data: ./data\ntask:\n  entry_script: score.py\n  program_arguments: --a 1 $[[--promote]]\n"
    assert load(make_job(tmp_path, text)).program_arguments == ("--a", "1", "--promote")


@pytest.mark.parametrize(
    ("target", "fragment"),
    [("${{inputs.d}}", "is an input"), ("${{outputs.nope}}", "is not declared")],
)
def test_bad_append_row_reference(tmp_path: Path, target: str, fragment: str) -> None:
    """append_row_to must reference a declared output."""
    text = f"input_data: ./data\ninputs:\n  d: {{path: ./data}}\ntask:\n  entry_script: score.py\n  append_row_to: '{target}'\n"
    root = make_job(tmp_path, text)
    assert_error(
        load_error(root), "task.append_row_to", root / "job.yaml", "append_row_to", fragment
    )
