"""``Model``: registered models are folders ``<spool>/models/<name>/<version>/``.

Guarantees: ``Model.register`` copies a file or folder into the next version of the
name, the layout the workers' ``Model.get_model_path`` reads (docs/azureml-core.md), so
an entry script finds what a notebook registered; ``Model.get_model_path`` here reads
the same folders from the client side.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from azureml._prsd.unsupported import Surface, module_getattr

if TYPE_CHECKING:
    from azureml.core.workspace import Workspace


class ModelNotFoundError(LookupError):
    """No registered model of that name (and version)."""


def _versions(folder: Path) -> list[int]:
    return (
        sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit()) if folder.is_dir() else []
    )


class Model(Surface):
    """A registered model: a name, a version, its files."""

    def __init__(self, workspace: Workspace, name: str | None = None, id: str | None = None,
                 tags: Any = None, properties: Any = None, version: int | None = None,
                 run_id: str | None = None, model_framework: str | None = None,
                 expand: bool = True, **kwargs: Any) -> None:  # fmt: skip
        if name is None and id is not None:
            name, _, v = id.partition(":")
            version = int(v) if v.isdigit() else version
        if name is None:
            raise ValueError("Model(workspace, name=...) needs a name or an id")
        self.workspace = workspace
        self.name = name
        versions = _versions(self._root(workspace, name))
        if version is None and not versions:
            raise ModelNotFoundError(
                f"model {name!r} is not registered in {self._root(workspace, name)}"
            )
        self.version = version if version is not None else versions[-1]
        if self.version not in versions:
            raise ModelNotFoundError(
                f"model {name!r} has no version {self.version} (has {versions})"
            )
        self.id = f"{name}:{self.version}"
        self.tags = dict(tags or {}) if isinstance(tags, dict) else {}
        self.properties = dict(properties or {}) if isinstance(properties, dict) else {}

    @staticmethod
    def _root(workspace: Workspace, name: str) -> Path:
        return Path(workspace.spool) / "models" / name

    @property
    def path(self) -> str:
        return str(self._root(self.workspace, self.name) / str(self.version))

    @staticmethod
    def register(workspace: Workspace, model_path: str, model_name: str, tags: Any = None,
                 properties: Any = None, description: str | None = None, datasets: Any = None,
                 model_framework: str | None = None, model_framework_version: str | None = None,
                 child_paths: Any = None, sample_input_dataset: Any = None,
                 sample_output_dataset: Any = None, resource_configuration: Any = None) -> Model:  # fmt: skip
        """Copy ``model_path`` (a file or folder) into the next version of ``model_name``."""
        src = Path(model_path)
        if not src.exists():
            raise FileNotFoundError(f"{model_path} does not exist")
        root = Model._root(workspace, model_name)
        version = (_versions(root) or [0])[-1] + 1
        dest = root / str(version)
        dest.mkdir(parents=True)
        if src.is_dir():
            shutil.copytree(src, dest / src.name)
        else:
            shutil.copy2(src, dest / src.name)
        print(f"Registering model {model_name}")
        return Model(workspace, model_name, version=version, tags=tags, properties=properties)

    @staticmethod
    def get_model_path(
        model_name: str, version: int | None = None, _workspace: Workspace | None = None
    ) -> str:
        """The registered model's file (a version holding one entry) or folder."""
        from azureml.core.workspace import Workspace

        ws = _workspace or Workspace.from_config()
        model = Model(ws, model_name, version=version)
        entries = list(Path(model.path).iterdir())
        return str(entries[0]) if len(entries) == 1 else model.path

    def download(
        self, target_dir: str = ".", exist_ok: bool = False, exists_ok: bool | None = None
    ) -> str:
        dest = Path(target_dir)
        for entry in Path(self.path).iterdir():
            if (dest / entry.name).exists() and not (exist_ok or exists_ok):
                raise FileExistsError(f"{dest / entry.name} exists; pass exist_ok=True")
            if entry.is_dir():
                shutil.copytree(entry, dest / entry.name, dirs_exist_ok=True)
            else:
                dest.mkdir(parents=True, exist_ok=True)
                shutil.copy2(entry, dest / entry.name)
        return str(dest)

    def __repr__(self) -> str:
        return f"Model(workspace={self.workspace.name!r}, name={self.name}, id={self.id}, version={self.version})"


__getattr__ = module_getattr("azureml.core.model")
