"""The pure parts of building Azure's conda files: Azure's SDK packages left out, the reason
of a failed source build, the phases of a build and how every view words them, and the
node's interpreters listed by pattern or folder."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from prsd.azure.watch import BuildTail, step_tails
from prsd.cli.runview import PlainProgress, building, progress_line
from prsd.envs.azureonly import is_azure_only
from prsd.envs.firstline import first_error_line
from prsd.envs.interp import candidates, listed_paths
from prsd.envs.phase import phase_of
from prsd.envs.settings import EnvSettings
from prsd.envs.spec import EnvError, left_out_note, parse_conda
from prsd.jobspec.envfiles import environment_to_build
from prsd.jobspec.yamlsafe import Doc, Setting, Site
from prsd.spool.atomic import write_atomic
from prsd.spool.envrecord import EnvBuild
from prsd.spool.nodereport import NodeReport, environment_line

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.spool.envrecord import EnvState

# uv 0.x's own output (not a terminal) for an sdist whose build backend raised.
UV_BUILD_FAILED = """\
Using Python 3.8.18 environment at: /c/.build-k-1
Resolved 1 package in 137ms
   Building idx2numpy==1.2.3
error: Failed to build `idx2numpy==1.2.3`
  cause: The build backend returned an error
  cause: Call to `setuptools.build_meta:__legacy__.build_wheel` failed (exit status: 1)

         [stdout]
         running bdist_wheel

         [stderr]
         Traceback (most recent call last):
           File "<string>", line 14, in <module>
         ModuleNotFoundError: No module named 'numpy'

hint: Build failures usually indicate a problem with the package or the build environment
"""

UV_COMPILE_FAILED = """\
error: Failed to build `fusepy==3.0.1`
  cause: The build backend returned an error
  cause: Call to `setuptools.build_meta.build_wheel` failed (exit status: 1)

         [stderr]
         fuse.c:3:10: fatal error: fuse.h: No such file or directory
         compilation terminated.
         error: command '/usr/bin/gcc' failed with exit code 1
"""

AZURE = """\
name: project_environment
dependencies:
  - python=3.8
  - pip:
      - azureml-defaults==1.38.0
      - azureml-dataset-runtime[fuse,pandas]
      - AzureML-Core>=1.30
      - azure-storage-blob
      - idx2numpy
"""


def test_a_failed_source_build_is_summed_up_by_its_own_reason() -> None:
    assert first_error_line(UV_BUILD_FAILED) == (
        "error: Failed to build `idx2numpy==1.2.3`: ModuleNotFoundError: No module named 'numpy'"
    )
    assert first_error_line(UV_COMPILE_FAILED) == (
        "error: Failed to build `fusepy==3.0.1`: "
        "fuse.c:3:10: fatal error: fuse.h: No such file or directory"
    )


def test_a_cause_chain_without_build_output_keeps_its_deepest_cause() -> None:
    out = "error: Failed to download `x`\n  cause: Disk full\n  cause: No space left on device\n"
    assert first_error_line(out) == "error: Failed to download `x`: No space left on device"
    said = "error: Failed to build `y`\n  cause: Call failed (exit status: 1)\nhint: more\n"
    assert first_error_line(said) == "error: Failed to build `y`: Call failed (exit status: 1)"


def test_azure_sdk_packages_are_left_out_of_a_conda_file_and_said() -> None:
    spec = parse_conda(AZURE)
    assert spec.pip == ("azure-storage-blob", "idx2numpy")
    assert spec.left_out == (
        "azureml-defaults==1.38.0",
        "azureml-dataset-runtime[fuse,pandas]",
        "AzureML-Core>=1.30",
    )
    plain = parse_conda("dependencies: [python=3.8, {pip: [azure-storage-blob, idx2numpy]}]")
    # the [pandas] extra's pins stay as constraints, which change what is installed
    assert spec.constraints == ("pandas<2.0.0", "numpy<2.0.0")
    assert spec.key("py") != plain.key("py")
    defaults = parse_conda(
        "dependencies: [python=3.8, {pip: [azureml-defaults, azure-storage-blob, idx2numpy]}]"
    )
    assert defaults.constraints == () and defaults.key("py") == plain.key("py")
    note = left_out_note(spec, "conda.yml")
    assert note.startswith("conda.yml: azureml-defaults==1.38.0, azureml-dataset-runtime")
    assert left_out_note(parse_conda("dependencies: [numpy]"), "x") == ""
    assert is_azure_only("azureml") and is_azure_only("azureml_core ; python_version>'3'")
    assert not is_azure_only("azure-ai-ml") and not is_azure_only("azuremlx")


@pytest.mark.parametrize(
    ("line", "phase"),
    [
        ("Resolved 12 packages in 1.20s", "downloading and building"),
        ("   Building idx2numpy==1.2.3", "building idx2numpy==1.2.3 from source"),
        ("Prepared 12 packages in 40.1s", "installing"),
        ("Installed 12 packages in 90ms", None),
        (" + numpy==1.24.4", None),
    ],
)
def test_uv_lines_start_phases(line: str, phase: str | None) -> None:
    assert phase_of(line) == phase


def test_the_build_line_every_view_shows() -> None:
    now = datetime(2026, 11, 27, 3, 0, 0, tzinfo=UTC)
    since = (now - timedelta(seconds=12)).isoformat()
    env = {"state": "building", "since": since, "phase": "resolving"}
    assert environment_line(EnvBuild.decode(env), now) == (
        "building environment: resolving (0:00:12)"
    )
    assert environment_line(EnvBuild("building", "?"), now) == "building environment (?)"
    assert environment_line(EnvBuild("failed", error="error: x"), now) == (
        "environment failed: error: x"
    )
    assert environment_line(EnvBuild("ready"), now) == ""
    assert environment_line(None, now) == ""
    n1 = {"node_id": "n1", "environment": env}
    doc: dict[str, Any] = {"state": "Running", "total_mbs": 4, "elapsed_s": 14, "nodes": [n1]}
    assert progress_line(doc, now) == (
        "Running: 0 of 4 mini-batches (0%), 0 failed, elapsed 0:00:14; "
        "building environment: resolving (0:00:12)"
    )
    two = {**doc, "nodes": [n1, {"node_id": "n2"}]}
    assert building(two, now) == "node n1: building environment: resolving (0:00:12)"
    assert building({**doc, "nodes": []}, now) == ""


def test_plain_progress_shows_a_new_build_phase_at_once() -> None:
    written: list[str] = []
    view = PlainProgress(written.append, every_s=60.0, clock=lambda: 100.0)
    since = datetime.now(UTC).isoformat()
    doc = {"state": "Running", "nodes": [{"node_id": "n1"}]}
    view.show(doc)
    view.show(doc)  # nothing new, and less than every_s later
    for phase in ("resolving", "resolving", "installing"):
        env = {"state": "building", "since": since, "phase": phase}
        view.show({**doc, "nodes": [{"node_id": "n1", "environment": env}]})
    assert len(written) == 3, written
    assert "building environment: resolving (0:00:0" in written[1]
    assert "building environment: installing (0:00:0" in written[2]


def test_build_tail_says_each_phase_once_from_the_nodes_reports(tmp_path: Path) -> None:
    """The v1 and v2 streams read a step's node reports as the agent writes them."""
    nodes = tmp_path / "nodes"
    nodes.mkdir()
    tail = next(t for t in step_tails(tmp_path) if isinstance(t, BuildTail))
    assert tail.new_lines() == []
    since = datetime.now(UTC).isoformat()

    def report(state: EnvState, phase: str = "", error: str = "") -> None:
        data = NodeReport("n1", environment=EnvBuild(state, since, phase, error)).encode()
        write_atomic(nodes / "n1.json", data, durable=False)  # as the agent writes it

    report(state="building", phase="resolving")
    (nodes / "n2.json").write_bytes(b'{"node_id": "n2", "busy": ')  # torn: read next time
    first = tail.new_lines()
    assert len(first) == 1 and first[0].startswith("node n1: building environment: resolving (")
    assert tail.new_lines() == []
    report(state="building", phase="building idx2numpy==1.2.3 from source")
    assert tail.new_lines()[0].startswith(
        "node n1: building environment: building idx2numpy==1.2.3 from source ("
    )
    report(state="failed", error="error: Failed to build `idx2numpy==1.2.3`: boom")
    assert tail.new_lines() == [
        "node n1: environment failed: error: Failed to build `idx2numpy==1.2.3`: boom"
    ]
    assert tail.new_lines() == []
    report(state="ready")
    assert tail.new_lines() == []


def test_interpreters_listed_by_glob_or_folder(tmp_path: Path) -> None:
    for version in ("3.7.16", "3.8.18"):
        bin_dir = tmp_path / "versions" / version / "bin"
        bin_dir.mkdir(parents=True)
        (bin_dir / "python").write_text("")
        (bin_dir / "pip").write_text("")
    folder = tmp_path / "versions" / "3.8.18" / "bin"
    assert listed_paths(f"{tmp_path}/versions/*/bin/python") == [
        f"{tmp_path}/versions/3.7.16/bin/python",
        f"{tmp_path}/versions/3.8.18/bin/python",
    ]
    assert listed_paths(str(folder)) == [f"{folder}/python"]
    assert listed_paths("/no/such/python") == ["/no/such/python"]
    listed = candidates("", f"{tmp_path}/versions/*/bin/python:{folder}")
    assert listed[:2] == listed_paths(f"{tmp_path}/versions/*/bin/python")


def test_source_builds_are_on_unless_the_node_says_no() -> None:
    assert EnvSettings.from_env({}).source_builds is True
    assert EnvSettings.from_env({"PRSD_ENV_SOURCE_BUILDS": "no"}).source_builds is False
    with pytest.raises(EnvError, match="PRSD_ENV_SOURCE_BUILDS='maybe': expected yes or no"):
        EnvSettings.from_env({"PRSD_ENV_SOURCE_BUILDS": "maybe"})


def test_an_inline_conda_files_note_names_its_key_once(tmp_path: Path) -> None:
    """``environment: {conda_file: {...}}`` written inline: the note about the Azure
    packages left out says ``<key> (inline)``, not the key twice."""
    inline = {"dependencies": ["python=3.8", {"pip": ["azureml-defaults", "idx2numpy"]}]}
    doc = Doc(tmp_path / "job.yaml", {"environment": inline}, {"environment": 3})
    setting = Setting({"conda_file": inline}, Site(doc, "task.environment"))
    built, notes = environment_to_build(setting, tmp_path)
    assert "idx2numpy" in built["conda_file"] and len(notes) == 1
    assert "task.environment.conda_file (inline): azureml-defaults" in notes[0]
    assert notes[0].count("task.environment.conda_file") == 1, notes
    (tmp_path / "conda.yml").write_text(yaml.safe_dump(inline), encoding="utf-8")
    _, by_file = environment_to_build(Setting({"conda_file": "conda.yml"}, setting.site), tmp_path)
    assert "task.environment.conda_file conda.yml: azureml-defaults" in by_file[0]
