"""The workspace's settings: Azure's ``config.json`` with a ``prsd`` section (pure reading).

Guarantees: :func:`find_config` looks where ``Workspace.from_config`` does (the given
path, else the current folder and its parents, each also in ``.azureml/`` and
``aml_config/``); :func:`read_settings` takes the spool from ``prsd.spool`` (relative to
the file) or ``PRSD_SPOOL``, and every other setting has a default, so a ``config.json``
written for Azure needs only the spool. A missing spool is an error naming both places.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CONFIG_NAMES = ("config.json",)
SUBFOLDERS = ("", ".azureml", "aml_config")
DEFAULT_DATASTORE = "workspaceblobstore"
SPOOL_ENV = "PRSD_SPOOL"


class ConfigError(ValueError):
    """config.json is missing, unreadable, or names no spool."""


@dataclass(frozen=True)
class Settings:
    """What a workspace is on prsd: a spool, datastore folders, a run mode."""

    spool: Path
    name: str = "prsd"
    subscription_id: str = ""
    resource_group: str = ""
    location: str = "local"
    datastores: dict[str, Path] = field(default_factory=dict)
    default_datastore: str = DEFAULT_DATASTORE
    blob_containers: dict[str, Path] = field(default_factory=dict)
    compute: tuple[str, ...] = ()
    python: str = ""  # run steps on this interpreter instead of building their environment
    local: bool = False  # run each submitted pipeline here in the background (prsd run)
    source: str = ""

    def datastore_folder(self, name: str) -> Path:
        """A datastore's folder: configured, else ``<spool>/datastores/<name>``."""
        return self.datastores.get(name) or self.spool / "datastores" / name


def find_config(path: str | os.PathLike[str] | None, file_name: str | None) -> Path:
    """The config file ``Workspace.from_config(path, _file_name=...)`` reads.

    Raises:
        ConfigError: no such file where Azure's SDK looks.
    """
    names = (file_name,) if file_name else CONFIG_NAMES
    given = Path(path) if path is not None else None
    if given is not None and given.is_file():
        return given
    starts = [given] if given is not None else [Path.cwd(), *Path.cwd().parents]
    looked = []
    for folder in starts:
        for sub in SUBFOLDERS:
            for name in names:
                candidate = folder / sub / name if sub else folder / name
                looked.append(str(candidate))
                if candidate.is_file():
                    return candidate
    raise ConfigError(
        "no workspace config file found; looked at "
        + ", ".join(looked[:6])
        + (" ..." if len(looked) > 6 else "")
        + '. Write config.json with {"prsd": {"spool": "/path/to/spool"}}'
    )


def read_settings(path: Path | None, environ: dict[str, str] | None = None) -> Settings:
    """The settings in ``path`` (None: from the environment alone).

    Raises:
        ConfigError: the file is not a JSON object, or no spool is named.
    """
    env = dict(os.environ) if environ is None else environ
    data: dict[str, Any] = {}
    if path is not None:
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from None
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: expected a JSON object")
        data = loaded
    prsd = data.get("prsd") or {}
    if not isinstance(prsd, dict):
        raise ConfigError(f"{path}: 'prsd' must be an object")
    base = path.parent if path is not None else Path.cwd()
    spool_text = prsd.get("spool") or env.get(SPOOL_ENV, "")
    if not spool_text:
        where = f'add "prsd": {{"spool": ...}} to {path} or ' if path else ""
        raise ConfigError(f"no spool named: {where}set {SPOOL_ENV}")
    return Settings(
        spool=_abs(base, str(spool_text)),
        name=str(data.get("workspace_name") or "prsd"),
        subscription_id=str(data.get("subscription_id") or ""),
        resource_group=str(data.get("resource_group") or ""),
        location=str(prsd.get("location") or "local"),
        datastores=_folders(base, prsd.get("datastores"), path, "datastores"),
        default_datastore=str(prsd.get("default_datastore") or DEFAULT_DATASTORE),
        blob_containers=_folders(base, prsd.get("blob_containers"), path, "blob_containers"),
        compute=tuple(str(c) for c in prsd.get("compute") or ()),
        python=str(prsd.get("python") or ""),
        local=bool(prsd.get("local", False)),
        source=str(path) if path is not None else SPOOL_ENV,
    )


def _abs(base: Path, text: str) -> Path:
    p = Path(os.path.expanduser(text))
    return p if p.is_absolute() else (base / p).absolute()


def _folders(base: Path, value: Any, path: Path | None, key: str) -> dict[str, Path]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: prsd.{key} must map names to folders")
    return {str(k): _abs(base, str(v)) for k, v in value.items()}
