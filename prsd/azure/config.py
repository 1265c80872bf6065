"""``MLClient.from_config``: Azure's ``config.json``, with a ``prsd`` section for the spool.

Guarantees: the file is found where Azure's SDK looks (``path``, a file or a folder,
else the current folder; in each folder ``<file_name>`` then ``.azureml/<file_name>``,
then the same in every parent folder), the same file v1's ``Workspace.from_config``
reads; the Azure keys (``subscription_id``, ``resource_group``, ``workspace_name``) are
kept, and ``prsd.spool`` (relative to the file), else ``PRSD_SPOOL``, names the spool.
``prsd.python`` and ``prsd.local`` are the client's ``python=`` and ``local=``.

Errors: :class:`ConfigError` (a ``ValueError``) for no file found (naming where it looked), a file that is not
a JSON object, or no spool named (naming both places).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prsd.spool.jsonobject import NotAnObject, decode_object

CONFIG_NAME = "config.json"
SUBFOLDERS = ("", ".azureml")
SPOOL_ENV = "PRSD_SPOOL"


class ConfigError(ValueError):
    """config.json is missing, unreadable, or names no spool."""


@dataclass(frozen=True)
class ClientConfig:
    """What ``config.json`` says to the client."""

    file: Path
    spool: Path
    subscription_id: str | None
    resource_group_name: str | None
    workspace_name: str | None
    python: str
    local: bool


def find_config(path: str | os.PathLike[str] | None, file_name: str | None) -> Path:
    """The config file ``MLClient.from_config(path=, file_name=)`` reads.

    Raises:
        ConfigError: no such file where Azure's SDK looks.
    """
    name = file_name or CONFIG_NAME
    given = Path(path) if path is not None else Path.cwd()
    if given.is_file():
        return given
    looked = []
    for folder in [given, *given.absolute().parents]:
        for sub in SUBFOLDERS:
            candidate = folder / sub / name if sub else folder / name
            looked.append(str(candidate))
            if candidate.is_file():
                return candidate
    shown = ", ".join(looked[:4]) + (" ..." if len(looked) > 4 else "")
    raise ConfigError(
        f"no {name} found; looked at {shown}. Write one with "
        '{"prsd": {"spool": "/path/to/spool"}} (Azure\'s keys may stay)'
    )


def read_config(file: Path, environ: dict[str, str] | None = None) -> ClientConfig:
    """The client settings in ``file`` (see the module docstring).

    Raises:
        ConfigError: not a JSON object, a ``prsd`` that is not one, or no spool named.
    """
    env = dict(os.environ) if environ is None else environ
    try:
        data = decode_object(file.read_text(encoding="utf-8"))
    except NotAnObject:
        raise ConfigError(f"{file}: expected a JSON object") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {file}: {exc}") from None
    prsd = data.get("prsd") or {}
    if not isinstance(prsd, dict):
        raise ConfigError(f"{file}: 'prsd' must be an object")
    spool = prsd.get("spool") or env.get(SPOOL_ENV, "")
    if not spool:
        raise ConfigError(
            f'no spool named: add "prsd": {{"spool": ...}} to {file} or set {SPOOL_ENV}'
        )
    where = Path(os.path.expanduser(str(spool)))
    return ClientConfig(
        file=file,
        spool=Path(
            os.path.normpath(where if where.is_absolute() else file.parent.absolute() / where)
        ),
        subscription_id=_text(data.get("subscription_id")),
        resource_group_name=_text(data.get("resource_group")),
        workspace_name=_text(data.get("workspace_name")),
        python=str(prsd.get("python") or ""),
        local=bool(prsd.get("local", False)),
    )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
