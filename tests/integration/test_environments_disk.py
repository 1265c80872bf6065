"""A build that runs out of disk: a real uv build into a real full file system (tmpfs).

The job's environment fails with uv's own error line and nothing half built is left
to serve; the same cache works again once there is room.
"""

from __future__ import annotations

import subprocess
from typing import TYPE_CHECKING

import pytest

from prsd.envs.node import prepare
from prsd.envs.settings import EnvSettings
from prsd.envs.spec import EnvError

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

CONDA = "dependencies:\n  - python=3.11\n  - pip:\n    - pyfiglet==1.0.4\n"  # a 1.7 MB wheel


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "small"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def test_build_out_of_disk_fails_clearly_and_leaves_nothing(
    tmp_path: Path, small_disk: Path
) -> None:
    log = tmp_path / "logs" / "n1.txt"
    settings = EnvSettings.from_env({"PRSD_ENV_CACHE": str(small_disk / "envs")})
    with pytest.raises(EnvError) as info:
        prepare(
            {"conda_file": CONDA, "source": "conda.yml"},
            spool=tmp_path,
            log_path=log,
            settings=settings,
            on_building=lambda _phase: None,
        )
    message = str(info.value)
    # uv's own chain of causes usually ends in the OS error; when it does not, prsd names
    # the full disk itself.
    assert message.startswith("error: "), message
    assert "No space left on device" in message or f"the disk holding {small_disk}" in message
    assert "\n" not in message
    assert f"failed: {message}" in log.read_text()
    envs = small_disk / "envs"
    assert not [p.name for p in envs.iterdir() if not p.name.startswith(".")], "nothing published"
    assert not list(envs.glob(".build-*")), "no half-built folder left"
