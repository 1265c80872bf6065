"""prsd/azure/config.py's ``read_config`` on real files: the spool it names, and a
clear error for a file that is not JSON or not a JSON object."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from prsd.azure.config import ConfigError, read_config

if TYPE_CHECKING:
    from pathlib import Path


def test_the_spool_is_relative_to_the_file(tmp_path: Path) -> None:
    file = tmp_path / "config.json"
    file.write_text('{"workspace_name": "w", "prsd": {"spool": "sp"}}', encoding="utf-8")
    config = read_config(file, environ={})
    assert (config.spool, config.workspace_name) == (tmp_path / "sp", "w")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2]", "config.json: expected a JSON object"),
        ('"spool"', "config.json: expected a JSON object"),
        ("{nope", "cannot read "),
        ('{"prsd": [1]}', "config.json: 'prsd' must be an object"),
    ],
)
def test_a_file_that_is_no_settings_object_is_refused(
    tmp_path: Path, text: str, message: str
) -> None:
    file = tmp_path / "config.json"
    file.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        read_config(file, environ={"PRSD_SPOOL": str(tmp_path)})
    assert message in str(caught.value)
