"""Command lines, interpreter choice, index settings and agent settings; pure."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from prsd.envs import commands
from prsd.envs.interp import Interpreter, choose
from prsd.envs.settings import EnvSettings
from prsd.envs.spec import EnvError, Pin

if TYPE_CHECKING:
    from pathlib import Path

PY311 = Interpreter("/usr/bin/python3.11", (3, 11, 2))
PY312 = Interpreter("/opt/py/bin/python3.12", (3, 12, 1))
PY313 = Interpreter("/opt/py/bin/python3.13", (3, 13, 0))


def test_choose_exact_newest_matching_and_no_pin() -> None:
    other = Interpreter("/opt/python3.11", (3, 11, 9))
    assert choose(Pin((3, 11)), [PY311, other, PY312]) == (other, "")
    assert choose(None, [PY312, PY311]) == (PY312, "")


def test_choose_pin_not_met() -> None:
    """An error naming the pin and what was found; with warn, the nearest newer one."""
    with pytest.raises(EnvError) as info:
        choose(Pin((3, 10)), [PY311, PY313])
    text = str(info.value)
    assert "no interpreter for python=3.10" in text and "/usr/bin/python3.11 (3.11.2)" in text
    assert "python_mismatch: warn" in text
    chosen, note = choose(Pin((3, 10)), [PY313, PY311, PY312], "warn")
    assert chosen == PY311 and "nearest newer one, /usr/bin/python3.11 (3.11.2)" in note
    with pytest.raises(EnvError, match="python=3.99"):
        choose(Pin((3, 99)), [PY311], "warn")  # nothing newer either
    with pytest.raises(EnvError, match="no Python interpreter found"):
        choose(None, [])


def test_uv_command_lines() -> None:
    assert commands.uv_venv("/x/uv", "/usr/bin/python3.11", "/c/.build-k-1") == [
        "/x/uv",
        "venv",
        "--relocatable",
        "--no-project",
        "--python",
        "/usr/bin/python3.11",
        "/c/.build-k-1",
    ]
    assert commands.uv_install("/x/uv", "/c/e", "/c/e/r.txt", wheels_only=True)[-2:] == [
        "--only-binary",
        ":all:",
    ]
    assert commands.uv_install("/x/uv", "/c/e", "/c/e/r.txt", wheels_only=False) == [
        "/x/uv",
        "pip",
        "install",
        "--no-progress",
        "--python",
        "/c/e/bin/python",
        "-r",
        "/c/e/r.txt",
    ]


def test_conda_command_lines() -> None:
    """conda and mamba: env create; micromamba: create; the job's file as written."""
    assert commands.conda_create("/opt/conda/bin/conda", "/c/k", "/c/.k.environment.yml") == [
        "/opt/conda/bin/conda",
        "env",
        "create",
        "-y",
        "-p",
        "/c/k",
        "-f",
        "/c/.k.environment.yml",
    ]
    assert commands.conda_create("mamba", "/c/k", "f.yml")[:3] == ["mamba", "env", "create"]
    assert commands.conda_create("/bin/micromamba", "/c/k", "f.yml") == [
        "/bin/micromamba",
        "create",
        "-y",
        "-p",
        "/c/k",
        "-f",
        "f.yml",
    ]


def test_pip_index_settings_passed_to_uv(tmp_path: Path) -> None:
    """pip's files then PIP_* win; a file:// index that does not exist is left out."""
    local = tmp_path / "simple"
    local.mkdir()
    files = [
        "[global]\nindex-url = https://mirror.example/simple\nfind-links = /nowhere\n",
        f"[global]\nextra-index-url = file://{local} file:///missing/simple\ncert = /etc/ca.pem\n",
    ]
    env = commands.pip_index_env({"PIP_FIND_LINKS": str(tmp_path)}, files)
    assert env == {
        "UV_INDEX_URL": "https://mirror.example/simple",
        "UV_EXTRA_INDEX_URL": f"file://{local}",
        "UV_FIND_LINKS": str(tmp_path),
        "UV_INDEX_STRATEGY": "unsafe-best-match",
        "SSL_CERT_FILE": "/etc/ca.pem",
    }
    assert commands.pip_index_env({}, ["not an ini file ["]) == {}


def test_agent_settings(tmp_path: Path) -> None:
    s = EnvSettings.from_env({"PRSD_ENV_CACHE": str(tmp_path), "PATH": str(tmp_path)})
    assert (s.cache, s.budget_bytes, s.build_timeout_s) == (tmp_path, 50 * 10**9, 1800.0)
    assert (s.conda, s.runtime, s.mismatch) == (None, None, "error")
    tool = tmp_path / "micromamba"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    assert EnvSettings.from_env({"PATH": str(tmp_path)}).conda == str(tool)
    assert EnvSettings.from_env({"PATH": str(tmp_path), "PRSD_CONDA": "none"}).conda is None
    with pytest.raises(EnvError, match="'podman' .* is not found"):
        EnvSettings.from_env({"PATH": str(tmp_path), "PRSD_CONTAINER_RUNTIME": "podman"})
    with pytest.raises(EnvError, match="PRSD_ENV_CACHE_MAX_GB='lots' is not a number"):
        EnvSettings.from_env({"PRSD_ENV_CACHE_MAX_GB": "lots"})
    with pytest.raises(EnvError, match="expected error or warn"):
        EnvSettings.from_env({"PRSD_PYTHON_MISMATCH": "maybe"})
