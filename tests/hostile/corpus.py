"""The hostile job corpus: builders of job folders that must each be refused, and why.

Each case writes one job folder (``build(folder)``) and names a fragment the
refusal in ``logs/job_result.txt`` must contain. Large files (the 100 MB YAML) are
made at test time, never stored.
"""

from __future__ import annotations

import os
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

GOOD_SCRIPT = """
def init():
    pass
def run(mini_batch):
    return [f"ok {p}" for p in mini_batch]
"""

BASE = {
    "type": "parallel",
    "name": "hostile",
    "input_data": "./data",
    "mini_batch_size": '"2"',
    "code": "./code",
    "entry_script": "score.py",
    "append_row_to": "./outputs/out.txt",
}


def spec_text(**over: str) -> str:
    """A job.yaml like the good one with some values replaced (written verbatim)."""
    v = {**BASE, **over}
    return textwrap.dedent(
        f"""\
        type: {v["type"]}
        name: {v["name"]}
        input_data: {v["input_data"]}
        mini_batch_size: {v["mini_batch_size"]}
        task:
          code: {v["code"]}
          entry_script: {v["entry_script"]}
          append_row_to: {v["append_row_to"]}
        """
    )


def good_folder(folder: Path, yaml_text: str | None = None) -> None:
    """A complete, valid job folder (4 input files), optionally with another job.yaml."""
    (folder / "code").mkdir(parents=True)
    (folder / "code" / "score.py").write_text(GOOD_SCRIPT, encoding="utf-8")
    (folder / "data").mkdir()
    for i in range(4):
        (folder / "data" / f"f{i}.txt").write_text(f"{i}\n", encoding="utf-8")
    (folder / "job.yaml").write_text(yaml_text or spec_text(), encoding="utf-8")


@dataclass(frozen=True)
class Case:
    """One hostile folder and the words its refusal must contain."""

    name: str
    build: Callable[[Path], None]
    expect: str
    skipped: bool = False  # the job runs, the hostile input is skipped and reported


def _yaml(**over: str) -> Callable[[Path], None]:
    def build(folder: Path) -> None:
        good_folder(folder, spec_text(**over))

    return build


def _raw(text: str | bytes) -> Callable[[Path], None]:
    def build(folder: Path) -> None:
        good_folder(folder)
        data = text.encode() if isinstance(text, str) else text
        (folder / "job.yaml").write_bytes(data)

    return build


def _then(extra: Callable[[Path], None], **over: str) -> Callable[[Path], None]:
    def build(folder: Path) -> None:
        good_folder(folder, spec_text(**over))
        extra(folder)

    return build


def _yaml_dir(folder: Path) -> None:
    good_folder(folder)
    (folder / "job.yaml").unlink()
    (folder / "job.yaml").mkdir()
    (folder / "job.yaml" / "x").write_text("type: parallel\n")


def _yaml_symlink(folder: Path) -> None:
    good_folder(folder)
    (folder / "job.yaml").unlink()
    (folder / "job.yaml").symlink_to("/etc/passwd")


def _yaml_fifo(folder: Path) -> None:
    good_folder(folder)
    (folder / "job.yaml").unlink()
    os.mkfifo(folder / "job.yaml")


def _big_yaml(folder: Path) -> None:
    good_folder(folder)
    line = b"# " + b"x" * 1022 + b"\n"
    with open(folder / "job.yaml", "ab") as f:
        f.writelines(line for _ in range(100 * 1024))  # 100 MiB


def _sparse_yaml(folder: Path) -> None:
    good_folder(folder)
    with open(folder / "job.yaml", "ab") as f:
        f.truncate(10 * 2**30)  # 10 GiB that reads as NUL bytes


LAUGHS = "\n".join(
    ["type: parallel", "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    + [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
)


def _code_link(folder: Path) -> None:
    (folder / "code").rename(folder / "code_real")
    (folder / "code").symlink_to("/etc")


def _data_link(folder: Path) -> None:
    for p in (folder / "data").iterdir():
        p.unlink()
    (folder / "data").rmdir()
    (folder / "data").symlink_to("/etc")


def _input_file_link(folder: Path) -> None:
    (folder / "data" / "f9.txt").symlink_to("/etc/shadow")


def _script_link(folder: Path) -> None:
    (folder / "code" / "score.py").unlink()
    (folder / "code" / "score.py").symlink_to("/etc/passwd")


def _outputs_link(folder: Path) -> None:
    (folder / "outputs").symlink_to("/etc")


def _nested_link(folder: Path) -> None:
    (folder / "data" / "deep").symlink_to("/root")


CASES: list[Case] = [
    Case("traversal-input", _yaml(input_data="../../../../etc"), "leaves the job folder"),
    Case(
        "traversal-input-file",
        _yaml(input_data="file:../../../etc/passwd"),
        "leaves the job folder",
    ),
    Case("traversal-code", _yaml(code="../../.."), "leaves the job folder"),
    Case("traversal-entry-script", _yaml(entry_script="../../../../etc/passwd"), "entry_script"),
    Case("traversal-append-row-to", _yaml(append_row_to="../../../../tmp/x.txt"), "append_row_to"),
    Case("absolute-append-row-to", _yaml(append_row_to="/etc/cron.d/x"), "append_row_to"),
    Case(
        "traversal-deep-dots",
        _yaml(input_data="./data/../../../../../etc"),
        "leaves the job folder",
    ),
    Case("absolute-outside-roots", _yaml(input_data="/etc"), "outside the allowed roots"),
    Case("absolute-proc", _yaml(input_data="/proc/self/environ"), "outside the allowed roots"),
    Case("control-char-input", _yaml(input_data='"./da\\x1bta"'), "control character"),
    Case("nul-in-input", _yaml(input_data='"./data\\0x"'), "NUL character"),
    Case("newline-in-input", _yaml(input_data='"./data\\n/../../etc"'), "control character"),
    Case("name-with-newline", _yaml(name='"evil\\nname"'), "control character"),
    Case("name-with-escape", _yaml(name='"evil\\x1b[2Jname"'), "control character"),
    Case("name-huge", _yaml(name="n" * 5000), "name"),
    Case("symlink-code-out", _then(_code_link), "symlink"),
    Case("symlink-data-out", _then(_data_link), "symlink"),
    Case("symlink-input-file-out", _then(_input_file_link), "symlink leads out", skipped=True),
    Case("symlink-nested-input-out", _then(_nested_link), "symlink leads out", skipped=True),
    Case("symlink-entry-script-out", _then(_script_link), "symlink"),
    Case("symlink-outputs-out", _then(_outputs_link), "symlink"),
    Case("job-yaml-is-a-folder", _yaml_dir, "not a regular file"),
    Case("job-yaml-is-a-symlink", _yaml_symlink, "symlink"),
    Case("job-yaml-is-a-fifo", _yaml_fifo, "not a regular file"),
    Case("billion-laughs", _raw(LAUGHS), "anchors and aliases"),
    Case("yaml-100mb", _big_yaml, "at most"),
    Case("yaml-sparse-10gb", _sparse_yaml, "at most"),
    Case("yaml-deep", _raw("type: parallel\nx: " + "[" * 5000 + "]" * 5000 + "\n"), "deeper"),
    Case(
        "yaml-python-tag",
        _raw("type: parallel\nx: !!python/object/apply:os.system [id]\n"),
        "is not accepted",
    ),
    Case("yaml-not-utf8", _raw(b"type: parallel\nname: \xff\xfe\n"), "not UTF-8"),
    Case("yaml-duplicate-key", _raw(spec_text() + "type: parallel\n"), "duplicate key"),
    Case("yaml-huge-int", _raw(spec_text().replace('"2"', "9" * 5000)), "mini_batch_size"),
    Case("absurd-mini-batch-size", _yaml(mini_batch_size='"999999999999TB"'), "mini_batch_size"),
    Case("absurd-negative-size", _yaml(mini_batch_size="-5"), "mini_batch_size"),
    Case(
        "yaml-python-scalar",
        _raw("type: parallel\nname: !!python/name:os.system\n"),
        "malformed YAML",
    ),
    Case("input-is-a-device", _yaml(input_data="/dev/zero"), "outside the allowed roots"),
]
