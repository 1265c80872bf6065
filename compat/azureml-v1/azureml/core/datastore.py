"""``Datastore``: a folder (``<spool>/datastores/<name>`` unless configured).

Guarantees: ``upload`` / ``upload_files`` copy files into the folder (never over an
existing file unless ``overwrite``); ``download`` copies out; ``path`` makes a
``DataPath`` for datasets; ``register_azure_blob_container`` maps a container to the
folder configured for it (a mount of that container) or fails naming the setting.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from azureml._prsd.unsupported import Surface

if TYPE_CHECKING:
    from azureml.core.workspace import Workspace


class DataPath(Surface):
    """A path inside a datastore (``datastore.path('x')``)."""

    def __init__(self, datastore: Datastore, path_on_datastore: str = "") -> None:
        self.datastore = datastore
        self.path_on_datastore = path_on_datastore.lstrip("/")

    @property
    def datastore_name(self) -> str:
        return self.datastore.name

    def __repr__(self) -> str:
        return f"$AZUREML_DATAREFERENCE_{self.datastore.name}/{self.path_on_datastore}"


class Datastore(Surface):
    """A named folder of the workspace."""

    datastore_type = "AzureBlob"

    def __init__(self, workspace: Workspace, name: str | None = None) -> None:
        self.workspace = workspace
        self.name = name or workspace._settings.default_datastore
        self._folder = workspace._settings.datastore_folder(self.name)

    @property
    def folder(self) -> Path:
        """Where the datastore's files are (a prsd addition)."""
        return self._folder

    @staticmethod
    def get(workspace: Workspace, datastore_name: str) -> Datastore:
        return workspace.datastores.get(datastore_name) or _unknown(workspace, datastore_name)

    @staticmethod
    def get_default(workspace: Workspace) -> Datastore:
        return workspace.get_default_datastore()

    @staticmethod
    def register_azure_blob_container(
        workspace: Workspace,
        datastore_name: str,
        container_name: str,
        account_name: str,
        sas_token: str | None = None,
        account_key: str | None = None,
        protocol: str | None = None,
        endpoint: str | None = None,
        overwrite: bool = False,
        create_if_not_exists: bool = False,
        skip_validation: bool = False,
        blob_cache_timeout: int | None = None,
        grant_workspace_access: bool = False,
        subscription_id: str | None = None,
        resource_group: str | None = None,
    ) -> Datastore:
        """The folder configured for the container (``prsd.blob_containers``)."""
        mounts = workspace._settings.blob_containers
        key = next(
            (k for k in (f"{account_name}/{container_name}", container_name) if k in mounts), None
        )
        if key is None:
            raise ValueError(
                f"blob container {account_name}/{container_name} has no local folder: add "
                f'"prsd": {{"blob_containers": {{"{account_name}/{container_name}": '
                f'"/mnt/{container_name}"}}}} to {workspace._settings.source} '
                "(a folder where the container is mounted)"
            )
        store = Datastore.__new__(Datastore)
        store.workspace, store.name, store._folder = workspace, datastore_name, mounts[key]
        workspace._settings.datastores[datastore_name] = mounts[key]
        return store

    def path(self, path: str | None = None, data_reference_name: str | None = None) -> DataPath:
        return DataPath(self, path or "")

    def upload(
        self,
        src_dir: str,
        target_path: str | None = None,
        overwrite: bool = False,
        show_progress: bool = True,
    ) -> DataReference:
        """Copy the files under ``src_dir`` to ``target_path`` in the datastore."""
        src = Path(src_dir)
        files = sorted(p for p in src.rglob("*") if p.is_file()) if src.is_dir() else [src]
        base = src if src.is_dir() else src.parent
        return self.upload_files([str(f) for f in files], str(base), target_path, overwrite,
                                 show_progress)  # fmt: skip

    def upload_files(
        self,
        files: list[str],
        relative_root: str | None = None,
        target_path: str | None = None,
        overwrite: bool = False,
        show_progress: bool = True,
    ) -> DataReference:
        """Copy ``files`` (paths kept relative to ``relative_root``) under ``target_path``."""
        dest_root = self._folder / (target_path or "").lstrip("/")
        root = Path(relative_root) if relative_root else None
        for i, name in enumerate(files, 1):
            src = Path(name)
            rel = src.relative_to(root) if root is not None else Path(src.name)
            dest = dest_root / rel
            if dest.exists() and not overwrite:
                raise FileExistsError(f"{dest} exists; pass overwrite=True to replace it")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
            if show_progress:
                print(f"Uploading {src}, {i} files out of an estimated total of {len(files)}")
        if show_progress:
            print(f"Uploaded {len(files)} files")
        return DataReference(self, (target_path or "").lstrip("/"))

    def download(
        self,
        target_path: str,
        prefix: str | None = None,
        overwrite: bool = False,
        show_progress: bool = True,
    ) -> int:
        """Copy the files under ``prefix`` to ``target_path``; returns how many."""
        count = 0
        for src in sorted(self._folder.rglob("*")):
            rel = src.relative_to(self._folder).as_posix()
            if not src.is_file() or (prefix and not rel.startswith(prefix)):
                continue
            dest = Path(target_path) / rel
            if dest.exists() and not overwrite:
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
            count += 1
        return count

    def __repr__(self) -> str:
        return f"Datastore(name='{self.name}', folder='{self._folder}')"


class DataReference(Surface):
    """What ``upload`` returns: a path in the datastore."""

    def __init__(self, datastore: Datastore, path_on_datastore: str) -> None:
        self.datastore = datastore
        self.path_on_datastore = path_on_datastore
        self.data_reference_name = datastore.name

    def __str__(self) -> str:
        return os.path.join(str(self.datastore.folder), self.path_on_datastore)


def _unknown(workspace: Workspace, name: str) -> Any:
    raise ValueError(
        f"no datastore {name!r}; known: {', '.join(workspace.datastores)} (configure more "
        f"under prsd.datastores in {workspace._settings.source})"
    )
