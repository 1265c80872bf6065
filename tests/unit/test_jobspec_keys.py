"""Keys of a job spec: defaults, v1 aliases, types, ranges, unknown and Azure-only keys."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from prsd.jobspec import JobSpec
from prsd.jobspec.aliases import ALIASES
from tests.unit.jobspec_cases import MINIMAL, assert_error, load, load_error, make_job

if TYPE_CHECKING:
    from pathlib import Path


def test_defaults(tmp_path: Path) -> None:
    """A minimal spec gets Azure's defaults (and prsd's where docs/jobspec.md says)."""
    spec = load(make_job(tmp_path / "digits"))
    assert spec.name == "digits"
    assert spec.job_dir == str(tmp_path / "digits")
    assert spec.input.paths == (str(tmp_path / "digits" / "data"),)
    assert spec.input.format == "files"
    assert spec.input.name == "input_data"
    assert spec.mini_batch_size == 10
    assert spec.code_dir == str(tmp_path / "digits")
    assert spec.entry_script == "score.py"
    assert (spec.instance_count, spec.max_concurrency_per_instance) == (None, None)
    assert (spec.mini_batch_error_threshold, spec.item_error_threshold) == (-1, -1)
    assert spec.allowed_failed_percent == 100.0
    assert (spec.max_retries, spec.timeout_s) == (2, 60.0)
    assert spec.logging_level == "INFO"
    assert spec.resource_monitor_interval_s == 600.0
    assert spec.task_overhead_timeout_s == 600.0
    assert spec.first_task_creation_timeout_s == 600.0
    assert spec.progress_timeout_s == 3 * (60.0 + 600.0)
    assert spec.output_action == "summary_only"
    assert spec.append_row_to is None
    assert spec.program_arguments == ()
    assert spec.ignored == ()
    assert spec.notes == ()


def test_spec_section_2_example(tmp_path: Path) -> None:
    """The example job.yaml of docs/jobspec.md loads with every value as written."""
    text = """\
    type: parallel
    name: digits-scoring
    input_data: ./images
    input_format: files
    mini_batch_size: "10"
    resources:
      instance_count: 2
      max_concurrency_per_instance: 2
    mini_batch_error_threshold: 5
    item_error_threshold: -1
    allowed_failed_percent: 100
    retry_settings:
      max_retries: 2
      timeout: 60
    logging_level: INFO
    resource_monitor_interval: 600
    task:
      code: ./script
      entry_script: score.py
      program_arguments: "--model ./model --labels ./labels.csv"
      append_row_to: ./outputs/results.txt
      environment_variables: {OMP_NUM_THREADS: "1"}
    side_inputs:
      labels: ./labels
    """
    root = make_job(tmp_path, text, files=("script/score.py",), dirs=("images", "labels"))
    spec = load(root)
    assert spec.name == "digits-scoring"
    assert spec.code_dir == str(root / "script")
    assert (spec.instance_count, spec.max_concurrency_per_instance) == (2, 2)
    assert spec.mini_batch_error_threshold == 5
    assert spec.program_arguments == (
        "--model",
        str(root / "model"),
        "--labels",
        str(root / "labels.csv"),
    )
    assert spec.output_action == "append_row"
    assert spec.append_row_to == str(root / "outputs" / "results.txt")
    assert spec.environment_variables == {"OMP_NUM_THREADS": "1"}
    assert spec.side_inputs == {"labels": str(root / "labels")}


V1_SPEC = """\
entry_script: score.py
source_directory: ./script
input_data: ./data
mini_batch_size: "5"
error_threshold: 10
allowed_failed_count: 3
allowed_failed_percent: 50
output_action: append_row
append_row_file_name: preds.txt
node_count: 2
process_count_per_node: 4
run_invocation_timeout: 120
run_max_try: 5
logging_level: DEBUG
environment_variables: {A: "1"}
partition_keys: [user]
partition_format: "{user}/{file}.png"
"""


def test_v1_parallel_run_config(tmp_path: Path) -> None:
    """Every v1 ParallelRunConfig name is read as its canonical key."""
    root = make_job(tmp_path, V1_SPEC, files=("script/score.py",))
    spec = load(root)
    assert spec.entry_script == "score.py"
    assert spec.code_dir == str(root / "script")
    assert spec.item_error_threshold == 10
    assert spec.mini_batch_error_threshold == 3
    assert spec.allowed_failed_percent == 50.0
    assert spec.output_action == "append_row"
    assert spec.append_row_to == str(root / "outputs" / "preds.txt")
    assert (spec.instance_count, spec.max_concurrency_per_instance) == (2, 4)
    assert spec.timeout_s == 120.0
    assert spec.max_retries == 4
    assert spec.logging_level == "DEBUG"
    assert spec.environment_variables == {"A": "1"}
    assert spec.partition_keys == ("user",)
    assert spec.mini_batch_size == 5


@pytest.mark.parametrize(
    ("alias", "value", "field", "expected"),
    [
        ("node_count", "3", "instance_count", 3),
        ("process_count_per_node", "3", "max_concurrency_per_instance", 3),
        ("max_concurrency_per_instance", "3", "max_concurrency_per_instance", 3),
        ("error_threshold", "7", "item_error_threshold", 7),
        ("allowed_failed_count", "7", "mini_batch_error_threshold", 7),
        ("run_invocation_timeout", "30", "timeout_s", 30.0),
        ("run_max_try", "1", "max_retries", 0),
        ("arguments", "[--x, '1']", "program_arguments", ("--x", "1")),
        ("environment", "azureml:env@latest", "python", None),
    ],
)
def test_each_alias(tmp_path: Path, alias: str, value: str, field: str, expected: Any) -> None:
    """Each alias sets its canonical JobSpec field."""
    spec = load(make_job(tmp_path, MINIMAL + f"{alias}: {value}\n"))
    assert getattr(spec, field) == expected


def test_alias_table_covers_spec_names() -> None:
    """The alias table holds the v1 names docs/jobspec.md lists."""
    v1 = {"entry_script", "source_directory", "node_count", "process_count_per_node"}
    v1 |= {"error_threshold", "run_invocation_timeout", "run_max_try", "allowed_failed_count"}
    assert v1 <= set(ALIASES)


@pytest.mark.parametrize(
    ("text", "alias", "canonical"),
    [
        (
            "node_count: 2\nresources:\n  instance_count: 2\n",
            "node_count",
            "resources.instance_count",
        ),
        (
            "error_threshold: 1\nitem_error_threshold: 1\n",
            "error_threshold",
            "item_error_threshold",
        ),
        (
            "run_max_try: 3\nretry_settings:\n  max_retries: 2\n",
            "run_max_try",
            "retry_settings.max_retries",
        ),
        (
            "max_concurrency_per_instance: 2\nprocess_count_per_node: 2\n",
            "process_count_per_node",
            "max_concurrency_per_instance",
        ),
    ],
)
def test_alias_and_canonical_conflict(
    tmp_path: Path, text: str, alias: str, canonical: str
) -> None:
    """An alias and its canonical key together is an error naming both."""
    root = make_job(tmp_path, MINIMAL + text)
    err = load_error(root)
    assert err.key in (alias, canonical)
    assert alias in err.problem and canonical in err.problem and "keep one" in err.problem
    assert err.location == f"{root / 'job.yaml'}:{_line(root, err.key.rpartition('.')[2] + ':')}"


def test_entry_script_alias_conflict(tmp_path: Path) -> None:
    """v1 entry_script beside task.entry_script is an error naming both."""
    root = make_job(tmp_path, MINIMAL + "entry_script: other.py\n")
    err = load_error(root)
    assert_error(
        err, "entry_script", root / "job.yaml", "entry_script: other.py", "task.entry_script"
    )


def _line(root: Path, needle: str) -> int:
    lines = (root / "job.yaml").read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.strip().startswith(needle))


@pytest.mark.parametrize(
    ("text", "key", "needle", "hint"),
    [
        (
            "mini_batch_sise: 5\n",
            "mini_batch_sise",
            "mini_batch_sise",
            "did you mean 'mini_batch_size'",
        ),
        ("timeout: 5\n", "timeout", "timeout", "it belongs under retry_settings:"),
        (
            "retry_settings:\n  timout: 5\n",
            "retry_settings.timout",
            "timout",
            "did you mean 'timeout'",
        ),
        (
            "resources:\n  instance_cont: 2\n",
            "resources.instance_cont",
            "instance_cont",
            "instance_count",
        ),
        (
            "task:\n  entry_script: score.py\n  entrypoint: x\n",
            "task.entrypoint",
            "entrypoint",
            "unknown key in task",
        ),
        ("loging_level: INFO\n", "loging_level", "loging_level", "did you mean 'logging_level'"),
    ],
)
def test_unknown_keys(tmp_path: Path, text: str, key: str, needle: str, hint: str) -> None:
    """Unknown keys are errors with their line and the nearest known key."""
    base = MINIMAL if not text.startswith("task:") else "input_data: ./data\n"
    root = make_job(tmp_path, base + text)
    assert_error(load_error(root), key, root / "job.yaml", needle, "unknown key", hint)


@pytest.mark.parametrize(
    ("text", "key", "fragment"),
    [
        (
            "retry_settings:\n  timeout: abc\n",
            "retry_settings.timeout",
            "expected a number of seconds",
        ),
        ("retry_settings:\n  timeout: 0\n", "retry_settings.timeout", "(0, 259200]"),
        ("retry_settings:\n  timeout: 259201\n", "retry_settings.timeout", "(0, 259200]"),
        ("retry_settings:\n  timeout: .nan\n", "retry_settings.timeout", "expected a number"),
        ("retry_settings:\n  timeout: true\n", "retry_settings.timeout", "expected a number"),
        ("retry_settings:\n  max_retries: -1\n", "retry_settings.max_retries", ">= 0"),
        ("retry_settings:\n  max_retries: 1.5\n", "retry_settings.max_retries", "retries"),
        ("retry_settings: 5\n", "retry_settings", "expected a mapping"),
        ("resources:\n  instance_count: 0\n", "resources.instance_count", ">= 1"),
        (
            "resources:\n  max_concurrency_per_instance: two\n",
            "resources.max_concurrency_per_instance",
            "from 1 to 1024",
        ),
        ("mini_batch_error_threshold: -2\n", "mini_batch_error_threshold", ">= -1"),
        ("item_error_threshold: many\n", "item_error_threshold", ">= -1"),
        ("allowed_failed_percent: 101\n", "allowed_failed_percent", "[0, 100]"),
        ("allowed_failed_percent: -1\n", "allowed_failed_percent", "[0, 100]"),
        ("resource_monitor_interval: -5\n", "resource_monitor_interval", ">= 0"),
        ("logging_level: LOUD\n", "logging_level", "expected one of"),
        ("bisect_failed_mini_batches: maybe\n", "bisect_failed_mini_batches", "true or false"),
        ("append_row_format: csv\n", "append_row_format", "text | parquet"),
        ("input_format: xml\n", "input_format", "files | csv | jsonl | parquet"),
        ("run_max_try: 0\n", "run_max_try", "tries >= 1"),
        ("name: ''\n", "name", "expected a name"),
        ("partition_keys: store\n", "partition_keys", "a list of key names"),
        ("environment_variables: [A]\n", "environment_variables", "a mapping of NAME: value"),
        ("environment_variables: {A: true}\n", "environment_variables.A", "quote it"),
        ("environment_variables: {A: null}\n", "environment_variables.A", "expected text"),
    ],
)
def test_wrong_types_and_ranges(tmp_path: Path, text: str, key: str, fragment: str) -> None:
    """Wrong types and out-of-range values name the key, file, line and what is expected."""
    root = make_job(tmp_path, MINIMAL + text)
    needle = key.rpartition(".")[2] + ":"
    assert_error(load_error(root), key, root / "job.yaml", needle, fragment)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('retry_settings:\n  timeout: "90"\n', 90.0),
        ("retry_settings:\n  timeout: 1.5\n", 1.5),
        ("retry_settings:\n  timeout: 259200\n", 259200.0),
    ],
)
def test_timeout_forms(tmp_path: Path, text: str, expected: float) -> None:
    """Timeouts accept integers, floats and numeric strings in (0, 259200]."""
    assert load(make_job(tmp_path, MINIMAL + text)).timeout_s == expected


@pytest.mark.parametrize(
    ("level", "expected"), [("debug", "DEBUG"), ("WARN", "WARNING"), ("Warning", "WARNING")]
)
def test_logging_level_spellings(tmp_path: Path, level: str, expected: str) -> None:
    """Logging levels are case-insensitive; WARN reads as WARNING."""
    assert load(make_job(tmp_path, MINIMAL + f"logging_level: {level}\n")).logging_level == expected


@pytest.mark.parametrize(
    ("text", "key", "fragment"),
    [
        ("task:\n  entry_script: score.py\n", "input_data", "required"),
        ("input_data: ./data\n", "task.entry_script", "required"),
        ("input_data: ./data\ntask:\n  entry_script:\n", "task.entry_script", "required"),
        ("input_data:\ntask:\n  entry_script: score.py\n", "input_data", "required"),
    ],
)
def test_missing_required_keys(tmp_path: Path, text: str, key: str, fragment: str) -> None:
    """A missing input_data or entry_script is an error naming the key and the file."""
    root = make_job(tmp_path, text)
    err = load_error(root)
    assert err.key == key
    assert err.location.startswith(f"{root / 'job.yaml'}:")
    assert fragment in err.problem


@pytest.mark.parametrize(
    ("text", "key", "fragment"),
    [
        ("type: command\n", "type", "parallel jobs only"),
        ("type: sweep\n", "type", "parallel jobs only"),
        ("task:\n  entry_script: score.py\n  type: model\n", "task.type", "run_function"),
    ],
)
def test_job_and_task_types(tmp_path: Path, text: str, key: str, fragment: str) -> None:
    """Only parallel jobs with run_function tasks are accepted."""
    base = MINIMAL if not text.startswith("task:") else "input_data: ./data\n"
    root = make_job(tmp_path, base + text)
    needle = key.rpartition(".")[2] + ":"
    assert_error(load_error(root), key, root / "job.yaml", needle, fragment)


@pytest.mark.parametrize("kind", ["parallel", "Parallel"])
def test_type_parallel_accepted(tmp_path: Path, kind: str) -> None:
    """type: parallel is accepted, in any case."""
    assert load(make_job(tmp_path, MINIMAL + f"type: {kind}\n")).entry_script == "score.py"


AZURE_KEYS = """\
$schema: https://azuremlschemas.azureedge.net/latest/parallelJob.schema.json
compute: azureml:cpu-cluster
identity: {type: managed}
is_deterministic: true
display_name: Digits
description: scores digits
tags: {owner: me}
experiment_name: exp
resources:
  instance_type: Standard_NC6
  shm_size: 2g
  docker_args: --ipc=host
"""


def test_azure_only_keys_listed_once(tmp_path: Path) -> None:
    """Azure-only keys are accepted and listed once, in file order, as ignored."""
    spec = load(make_job(tmp_path, MINIMAL + AZURE_KEYS))
    assert spec.ignored == (
        "$schema",
        "compute",
        "identity",
        "is_deterministic",
        "display_name",
        "description",
        "tags",
        "experiment_name",
        "resources.instance_type",
        "resources.shm_size",
        "resources.docker_args",
    )


def test_environment_variables_merge(tmp_path: Path) -> None:
    """Top-level (Azure v2) and task environment variables merge; numbers become text."""
    text = MINIMAL + "  environment_variables: {B: 2}\nenvironment_variables: {A: '1', B: 2}\n"
    spec = load(make_job(tmp_path, text))
    assert spec.environment_variables == {"A": "1", "B": "2"}


def test_environment_variables_disagree(tmp_path: Path) -> None:
    """One variable with two different values is an error naming both keys."""
    text = MINIMAL + "  environment_variables: {B: x}\nenvironment_variables: {B: y}\n"
    root = make_job(tmp_path, text)
    err = load_error(root)
    assert err.key == "task.environment_variables.B"
    assert "environment_variables.B" in err.problem


@pytest.mark.parametrize(
    ("size", "expected"),
    [("10", 10), (3, 3), ("  7 ", 7)],
)
def test_files_mini_batch_size(tmp_path: Path, size: object, expected: int) -> None:
    """A files input takes a positive count of files."""
    text = MINIMAL + f"mini_batch_size: {size!r}\n".replace("'", '"')
    assert load(make_job(tmp_path, text)).mini_batch_size == expected


@pytest.mark.parametrize(
    ("size", "fragment"),
    [
        ('"10kb"', "apply to tabular inputs: set input_format"),
        ("0", "positive count"),
        ('"ten"', "count of files"),
        ("-3", "positive"),
    ],
)
def test_bad_files_mini_batch_size(tmp_path: Path, size: str, fragment: str) -> None:
    """A files input refuses sizes, zero and words."""
    root = make_job(tmp_path, MINIMAL + f"mini_batch_size: {size}\n")
    assert_error(
        load_error(root), "mini_batch_size", root / "job.yaml", "mini_batch_size", fragment
    )


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        ('"100"', 100),
        (2048, 2048),
        ('"10kb"', 10 * 1024),
        ('"10KB"', 10 * 1024),
        ('"1MB"', 1024 * 1024),
        ('"2Gb"', 2 * 1024**3),
        ('"100 kb"', 100 * 1024),
    ],
)
def test_tabular_mini_batch_size(tmp_path: Path, size: object, expected: int) -> None:
    """A tabular input takes a 1024-based size, case-insensitive."""
    text = "input_data: ./t.csv\ntask: {entry_script: score.py}\n" + f"mini_batch_size: {size}\n"
    root = make_job(tmp_path, text)
    (root / "t.csv").write_text("a\n1\n", encoding="utf-8")
    spec = load(root)
    assert spec.input.format == "csv"
    assert spec.mini_batch_size == expected


@pytest.mark.parametrize(
    "size", ['"10 kilobytes"', '"1.5MB"', '"10tb"', '"0kb"', '"kb"', "true", '"10bb"']
)
def test_bad_tabular_mini_batch_size(tmp_path: Path, size: str) -> None:
    """Bad size strings for a tabular input are errors with the key and line."""
    text = "input_data: ./t.csv\ntask: {entry_script: score.py}\n" + f"mini_batch_size: {size}\n"
    root = make_job(tmp_path, text)
    (root / "t.csv").write_text("a\n1\n", encoding="utf-8")
    err = load_error(root)
    assert_error(err, "mini_batch_size", root / "job.yaml", "mini_batch_size", "size")


def test_tabular_default_mini_batch_size(tmp_path: Path) -> None:
    """A tabular input's default mini-batch is 1 MB."""
    root = make_job(tmp_path, "input_data: ./t.jsonl\ntask: {entry_script: score.py}\n")
    (root / "t.jsonl").write_text("{}\n", encoding="utf-8")
    spec = load(root)
    assert (spec.input.format, spec.mini_batch_size) == ("jsonl", 1024 * 1024)


def test_round_trip_through_json(tmp_path: Path) -> None:
    """A loaded spec survives to_json/from_json unchanged."""
    root = make_job(tmp_path, V1_SPEC, files=("script/score.py",))
    spec = load(root)
    assert JobSpec.from_json(spec.to_json()) == spec
