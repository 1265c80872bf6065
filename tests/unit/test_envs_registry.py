"""Registered environments in a spool folder, and the status lines of a building node."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest
import yaml

from prsd.cli.envs import node_environment_line
from prsd.envs import registry
from prsd.envs.node import resolve, resolve_with_image
from prsd.envs.spec import EnvError
from prsd.spool.envrecord import EnvBuild
from prsd.spool.nodereport import NodeReport

if TYPE_CHECKING:
    from pathlib import Path

CONDA = "name: x\ndependencies:\n  - python=3.11\n  - pip:\n    - pyfiglet==1.0.4\n"


def _env_file(tmp_path: Path, text: str) -> Path:
    (tmp_path / "conda.yml").write_text(CONDA)
    path = tmp_path / "env.yml"
    path.write_text(text)
    return path


def test_register_list_and_resolve(tmp_path: Path) -> None:
    """The conda file is stored inline; versions count up; @latest is the newest."""
    spool = tmp_path / "spool"
    env = _env_file(tmp_path, "name: figlet\nimage: ubuntu:22.04\nconda_file: conda.yml\n")
    assert registry.register(spool, env) == ("figlet", "1")
    assert registry.register(spool, env) == ("figlet", "2")
    pinned = _env_file(tmp_path, "name: figlet\nversion: '10'\nconda_file: conda.yml\n")
    assert registry.register(spool, pinned) == ("figlet", "10")
    assert registry.known(spool) == {"figlet": ["1", "2", "10"]}
    stored = yaml.safe_load((spool / "environments" / "figlet" / "1.yaml").read_text())
    assert stored["conda_file"]["dependencies"][0] == "python=3.11"
    assert registry.lookup(spool, "figlet", "latest")["version"] == "10"
    spec, image = resolve_with_image({"registered": "azureml:figlet:2"}, spool)
    assert spec is not None and spec.pip == ("pyfiglet==1.0.4",) and image == "ubuntu:22.04"
    assert resolve({"registered": "azureml:figlet:10"}, spool) is not None
    with pytest.raises(EnvError, match="figlet:10 is already registered"):
        registry.register(spool, pinned)


@pytest.mark.parametrize(
    ("ref", "fragment"),
    [
        ("azureml:nope@latest", "unknown environment 'nope'; known: figlet (prsctl env list)"),
        ("azureml:figlet:7", "environment 'figlet' has no version '7'; known: 1"),
        ("azureml://registries/x/environments/y", "is not an environment reference"),
    ],
)
def test_unknown_references(tmp_path: Path, ref: str, fragment: str) -> None:
    spool = tmp_path / "spool"
    registry.register(spool, _env_file(tmp_path, "name: figlet\nconda_file: conda.yml\n"))
    with pytest.raises(EnvError) as info:
        resolve({"registered": ref}, spool)
    assert fragment in str(info.value)


def test_curated_name_not_registered_builds_nothing(tmp_path: Path) -> None:
    assert (
        resolve({"registered": "azureml:AzureML-sklearn-1.0@latest", "curated": True}, tmp_path)
        is None
    )


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("name: 'a b'\nconda_file: conda.yml\n", "'name' must be a plain name"),
        ("name: x\n", "needs 'conda_file' or 'image'"),
        ("[1, 2]\n", "is not an environment"),
    ],
)
def test_bad_files_refused(tmp_path: Path, text: str, fragment: str) -> None:
    with pytest.raises(EnvError, match=fragment):
        registry.register(tmp_path / "spool", _env_file(tmp_path, text))


def test_status_lines() -> None:
    now = datetime(2026, 1, 1, 12, 1, 5, tzinfo=UTC)
    since = "2026-01-01T12:00:00+00:00"
    building = NodeReport("n1", environment=EnvBuild("building", since))
    assert node_environment_line(building, now) == ["node n1: building environment (0:01:05)"]
    failed = NodeReport("n2", environment=EnvBuild("failed", "", error="error: x"))
    assert node_environment_line(failed, now) == ["node n2: environment failed: error: x"]
    assert node_environment_line(NodeReport("n3", environment=EnvBuild("ready")), now) == []
    assert node_environment_line(NodeReport("n4"), now) == []
