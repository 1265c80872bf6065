"""program_arguments: path rewriting, Azure's tuning arguments, and the settings file."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from tests.unit.jobspec_cases import assert_error, load, load_error, make_job

if TYPE_CHECKING:
    from pathlib import Path


def _job(tmp_path: Path, args: str, extra: str = "", dirs: tuple[str, ...] = ("data",)) -> Path:
    text = f"input_data: ./data\n{extra}task:\n  entry_script: score.py\n  program_arguments: >-\n    {args}\n"
    return make_job(tmp_path / "job", text, dirs=dirs)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ("--model ./model", ["--model", "{root}/model"]),
        ("--model=./model/v1", ["--model={root}/model/v1"]),
        ("--labels labels", ["--labels", "{root}/labels"]),
        ("--labels ./labels/", ["--labels", "{root}/labels"]),
        ("--data ./data", ["--data", "{root}/data"]),
        ("--mode fast --n 3", ["--mode", "fast", "--n", "3"]),
        (
            "--quoted 'a b' --path \"./with space\"",
            ["--quoted", "a b", "--path", "{root}/with space"],
        ),
        ("--up ../job/model", ["--up", "{root}/model"]),
    ],
)
def test_paths_in_arguments_become_absolute(tmp_path: Path, args: str, expected: list[str]) -> None:
    """./ and ../ paths, and the spec text of declared input paths, become absolute."""
    root = _job(tmp_path, args, "side_inputs: {labels: labels}\n", dirs=("data", "labels"))
    spec = load(root)
    assert list(spec.program_arguments) == [e.format(root=root) for e in expected]


def test_argument_path_leaving_job_folder(tmp_path: Path) -> None:
    """A ../ argument that leaves the job folder is refused like any other path."""
    root = _job(tmp_path, "--secret ../../etc/passwd")
    assert_error(
        load_error(root),
        "task.program_arguments",
        root / "job.yaml",
        "program_arguments",
        "leaves the job folder",
    )


def test_argument_list_form(tmp_path: Path) -> None:
    """A list of arguments is taken token by token (v1 arguments)."""
    text = "input_data: ./data\nentry_script: score.py\narguments: ['--model', './model', '--name', 'a b']\n"
    root = make_job(tmp_path, text)
    assert load(root).program_arguments == ("--model", str(root / "model"), "--name", "a b")


def test_substituted_path_with_space_is_one_argument(tmp_path: Path) -> None:
    """A referenced path holding a space stays one argument."""
    text = "input_data: ./data\ninputs:\n  m: {path: './my model'}\ntask:\n  entry_script: score.py\n  program_arguments: --model ${{inputs.m}}\n"
    root = make_job(tmp_path, text, dirs=("data", "my model"))
    assert load(root).program_arguments == ("--model", str(root / "my model"))


@pytest.mark.parametrize(
    ("args", "field", "expected"),
    [
        ("--error_threshold 5", "item_error_threshold", 5),
        ("--error_threshold=2.5", "item_error_threshold", 3),
        ("--error_threshold -7", "item_error_threshold", -1),
        ("--allowed_failed_percent 30", "allowed_failed_percent", 30.0),
        ("--allowed_failed_count 4", "mini_batch_error_threshold", 4),
        ("--task_overhead_timeout 1200", "task_overhead_timeout_s", 1200.0),
        ("--progress_update_timeout 900", "progress_update_timeout_s", 900.0),
        ("--first_task_creation_timeout 30", "first_task_creation_timeout_s", 30.0),
        ("--resource_monitor_interval 0", "resource_monitor_interval_s", 0.0),
        ("--profiling_module cProfile", "profiling_module", "cProfile"),
        ("--profiling_module=profile", "profiling_module", "profile"),
        ("--run_invocation_timeout 90", "timeout_s", 90.0),
        ("--score_run_timeout 45", "timeout_s", 45.0),
        ("--run_max_try 5", "max_retries", 4),
        ("--mini_batch_size 4", "mini_batch_size", 4),
        ("--append_row_dataframe_header True", "append_row_dataframe_header", True),
        ("--append_row_dataframe_header false", "append_row_dataframe_header", False),
    ],
)
def test_tuning_arguments(tmp_path: Path, args: str, field: str, expected: Any) -> None:
    """Azure's system-tuning arguments set JobSpec fields and are still passed on."""
    spec = load(_job(tmp_path, args))
    assert getattr(spec, field) == expected
    assert spec.program_arguments[0].startswith(args.split()[0].split("=")[0])


def test_tuning_mini_batch_size_tabular(tmp_path: Path) -> None:
    """--mini_batch_size reads as a size for a tabular input."""
    text = "input_data: ./a.csv\ntask:\n  entry_script: score.py\n  program_arguments: --mini_batch_size 2kb\n"
    root = make_job(tmp_path, text, files=("score.py", "a.csv"))
    assert load(root).mini_batch_size == 2048


@pytest.mark.parametrize(
    ("args", "flag", "fragment"),
    [
        (
            "--run_invocation_timeout abc",
            "--run_invocation_timeout",
            "expected a number of seconds",
        ),
        ("--task_overhead_timeout 0", "--task_overhead_timeout", "(0, 259200]"),
        ("--allowed_failed_percent 150", "--allowed_failed_percent", "[0, 100]"),
        ("--profiling_module yappi", "--profiling_module", "cProfile | profile"),
        ("--run_max_try 0", "--run_max_try", "tries >= 1"),
        ("--mini_batch_size 1mb", "--mini_batch_size", "count of files"),
        ("--append_row_dataframe_header maybe", "--append_row_dataframe_header", "true or false"),
        ("--x 1 --error_threshold", "--error_threshold", "needs a value"),
    ],
)
def test_bad_tuning_arguments(tmp_path: Path, args: str, flag: str, fragment: str) -> None:
    """A tuning argument with a bad value is an error naming the flag and the line."""
    root = _job(tmp_path, args)
    err = load_error(root)
    assert_error(
        err, f"task.program_arguments {flag}", root / "job.yaml", "program_arguments", fragment
    )


def test_argument_wins_over_yaml_with_note(tmp_path: Path) -> None:
    """A tuning argument that disagrees with a YAML key wins, and a note says so."""
    root = _job(
        tmp_path,
        "--run_invocation_timeout 90 --error_threshold 3",
        "retry_settings: {timeout: 60}\nerror_threshold: 3\n",
    )
    spec = load(root)
    assert spec.timeout_s == 90.0
    assert spec.notes == (
        "task.program_arguments --run_invocation_timeout (90.0) overrides retry_settings.timeout (60.0)",
    )


def test_near_miss_argument_noted(tmp_path: Path) -> None:
    """A near miss of a system argument (Azure's own typo) gets a note and is passed on."""
    spec = load(_job(tmp_path, "--resource_monitor_interva 20 --model_name m"))
    assert spec.resource_monitor_interval_s == 600.0
    assert spec.program_arguments == ("--resource_monitor_interva", "20", "--model_name", "m")
    assert len(spec.notes) == 1
    assert "did you mean --resource_monitor_interval?" in spec.notes[0]


def test_azure_only_arguments_ignored(tmp_path: Path) -> None:
    """Azure-only system arguments are passed on and listed as ignored."""
    spec = load(_job(tmp_path, "--copy_logs_to_parent True --nice 5"))
    assert spec.ignored == (
        "task.program_arguments --copy_logs_to_parent",
        "task.program_arguments --nice",
    )
    assert spec.program_arguments == ("--copy_logs_to_parent", "True", "--nice", "5")


def _settings(root: Path, content: object) -> None:
    text = content if isinstance(content, str) else json.dumps(content)
    (root / "parallel_run_step.settings.json").write_text(text, encoding="utf-8")


def test_settings_json(tmp_path: Path) -> None:
    """parallel_run_step.settings.json in the code folder sets to_csv keyword arguments."""
    root = make_job(tmp_path)
    _settings(root, {"append_row": {"pandas.DataFrame.to_csv": {"sep": ",", "index": True}}})
    assert load(root).to_csv_kwargs == {"sep": ",", "index": True}


@pytest.mark.parametrize(
    ("content", "key", "fragment"),
    [
        ("{not json", "", "not valid JSON"),
        ([], "", "expected a JSON object"),
        ({"append_row": []}, "append_row", "expected an object"),
        (
            {"append_row": {"pandas.DataFrame.to_csv": "sep=,"}},
            "append_row.pandas.DataFrame.to_csv",
            "keyword arguments",
        ),
        (
            {"append_row": {"pandas.DataFrame.to_csv": {"path_or_buf": "x"}}},
            "append_row.pandas.DataFrame.to_csv.path_or_buf",
            "set by prsd",
        ),
        (
            {"append_row": {"pandas.DataFrame.to_csv": {"mode": "w"}}},
            "append_row.pandas.DataFrame.to_csv.mode",
            "set by prsd",
        ),
        (
            {"append_row": {"pandas.DataFrame.to_csv": {"sepp": ","}}},
            "append_row.pandas.DataFrame.to_csv.sepp",
            "did you mean 'sep'",
        ),
        (
            {"append_row": {"pandas.DataFrame.to_csv": {"line_terminator": "\n"}}},
            "append_row.pandas.DataFrame.to_csv.line_terminator",
            "lineterminator",
        ),
    ],
)
def test_bad_settings_json(tmp_path: Path, content: object, key: str, fragment: str) -> None:
    """A bad settings file is an error naming the file and the key."""
    root = make_job(tmp_path)
    _settings(root, content)
    err = load_error(root)
    assert (err.key, err.location) == (key, str(root / "parallel_run_step.settings.json"))
    assert fragment in err.problem


def test_settings_json_symlink_outside(tmp_path: Path) -> None:
    """A settings file that is a symlink out of the code folder is not read."""
    outside = tmp_path / "elsewhere.json"
    outside.write_text("{}", encoding="utf-8")
    root = make_job(tmp_path / "job")
    (root / "parallel_run_step.settings.json").symlink_to(outside)
    assert "symlink leading outside" in load_error(root).problem
