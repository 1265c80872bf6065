"""``Model.get_model_path(name, version=None)``: a model from a models folder, offline.

Where models are looked for, in this order (the first that has the model wins):

1. ``$PRSD_MODELS_DIR`` (an environment variable of the job or of the agent);
2. ``models/`` in the job's code snapshot (small models that travel with the code);
3. ``models/`` at the top of the spool (``<spool>/models``: the fleet's shared models).

In a models folder, a model is ``<name>/<version>/...`` (Azure's layout under
``AZUREML_MODEL_DIR``), ``<name>/...`` (no versions), or a single file ``<name>``.
Without ``version`` the highest numeric version is taken. As in Azure, a model
version that holds exactly one file resolves to that file, otherwise to its folder.
A model found nowhere raises :class:`ModelNotFoundError` naming every place looked.
"""

from __future__ import annotations

import os
from typing import Any

from ._where import config, job_root

MODELS_ENV = "PRSD_MODELS_DIR"


class ModelNotFoundError(Exception):
    """No models folder holds the model (the message says where prsd looked)."""


def models_folders() -> list[str]:
    """The models folders of this worker, in search order (some may not exist)."""
    folders = []
    env = os.environ.get(MODELS_ENV, "")
    if env:
        folders.append(env)
    code_dir = config().get("code_dir")
    if isinstance(code_dir, str) and code_dir:
        folders.append(os.path.join(code_dir, "models"))
    root = job_root()
    spool = os.path.dirname(os.path.dirname(root))
    folders.append(os.path.join(spool, "models"))
    return folders


def _versions(folder: str) -> list[int]:
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(int(n) for n in names if n.isdigit() and os.path.isdir(os.path.join(folder, n)))


def _one_file(folder: str, folders_too: bool = False) -> str:
    """The folder's one entry (a file; with ``folders_too`` a folder as well), else the
    folder. A version registered from a folder holds that folder: Azure returns it."""
    try:
        names = [n for n in os.listdir(folder) if not n.startswith(".")]
    except OSError:
        return folder
    if len(names) == 1:
        only = os.path.join(folder, names[0])
        if os.path.isfile(only) or (folders_too and os.path.isdir(only)):
            return only
    return folder


def find_model(folder: str, name: str, version: int | None) -> str | None:
    """The model's path in one models folder, or None."""
    base = os.path.join(folder, name)
    if os.path.isfile(base) and version is None:
        return base
    if not os.path.isdir(base):
        return None
    versions = _versions(base)
    if version is not None:
        found = os.path.join(base, str(version))
        return _one_file(found, folders_too=True) if version in versions else None
    if versions:
        return _one_file(os.path.join(base, str(versions[-1])), folders_too=True)
    return _one_file(base)


class Model:
    """The model registry, as far as an offline worker has one."""

    def __init__(self, workspace: Any = None, name: str = "", version: int | None = None):
        self.name = name
        self.version = version
        self.path = Model.get_model_path(name, version)

    @staticmethod
    def get_model_path(model_name: str, version: int | None = None, _workspace: Any = None) -> str:
        """The path of model ``model_name`` (a file, or a folder).

        Raises:
            ModelNotFoundError: no models folder holds it; the message names them all.
        """
        if not isinstance(model_name, str) or not model_name or "/" in model_name:
            raise ModelNotFoundError(f"{model_name!r} is not a model name")
        wanted = None if version is None else int(version)
        looked = []
        for folder in models_folders():
            found = find_model(folder, model_name, wanted)
            if found is not None:
                return found
            looked.append(os.path.join(folder, model_name))
        which = "any version" if wanted is None else f"version {wanted}"
        if not os.environ.get(MODELS_ENV):
            looked.insert(0, f"${MODELS_ENV} (not set)")
        raise ModelNotFoundError(
            f"model {model_name!r} ({which}) was not found; looked in: {', '.join(looked)}. "
            f"Put it there as <name>/<version>/<files> (or set {MODELS_ENV} to a folder "
            "that has it): see docs/azureml-core.md"
        )
