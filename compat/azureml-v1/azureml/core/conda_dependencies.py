"""``CondaDependencies``: the conda file of an ``Environment`` (Azure's format).

Guarantees: ``create`` / ``add_*`` build the same conda mapping Azure writes
(``name``, ``channels``, ``dependencies`` with a ``pip:`` list); :meth:`prsd_mapping`
is that mapping without the ``azureml-*`` SDK packages (the list jobs' conda files use
too, :mod:`prsd.envs.azureonly`), which a prsd worker does not need (its offline ``azureml.core`` serves entry scripts), or None when nothing is left.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from azureml._prsd.unsupported import Surface, module_getattr
from prsd.envs.azureonly import is_azure_only

# Azure's SDK packages (``azureml-*``): one list with the YAML conda files of jobs.
is_sdk_package = is_azure_only


class CondaDependencies(Surface):
    """Conda and pip packages of an environment."""

    def __init__(
        self, conda_dependencies_file_path: str | None = None, _underlying_structure: Any = None
    ) -> None:
        self.python_version: str | None = None
        self.conda_packages: list[str] = []
        self.pip_packages: list[str] = []
        self.channels: list[str] = ["anaconda", "conda-forge"]
        if conda_dependencies_file_path is not None:
            data = yaml.safe_load(Path(conda_dependencies_file_path).read_text(encoding="utf-8"))
            self._load(data if isinstance(data, dict) else {})

    def _load(self, data: dict[str, Any]) -> None:
        self.channels = [str(c) for c in data.get("channels") or []]
        for dep in data.get("dependencies") or []:
            if isinstance(dep, dict):
                self.pip_packages.extend(str(p) for p in dep.get("pip") or [])
            elif str(dep).startswith("python=") or str(dep).startswith("python>"):
                self.python_version = str(dep)[len("python") :].lstrip("=")
            elif str(dep) != "pip":
                self.conda_packages.append(str(dep))

    @staticmethod
    def create(
        pip_indexurl: str | None = None,
        pip_packages: list[str] | None = None,
        conda_packages: list[str] | None = None,
        python_version: str | None = None,
        pin_sdk_version: bool = True,
    ) -> CondaDependencies:
        deps = CondaDependencies()
        deps.python_version = python_version
        deps.conda_packages = list(conda_packages or [])
        deps.pip_packages = ["azureml-defaults", *(pip_packages or [])]
        return deps

    def add_pip_package(self, pip_package: str) -> None:
        if pip_package not in self.pip_packages:
            self.pip_packages.append(pip_package)

    def add_conda_package(self, conda_package: str) -> None:
        if conda_package not in self.conda_packages:
            self.conda_packages.append(conda_package)

    def add_channel(self, channel: str) -> None:
        if channel not in self.channels:
            self.channels.append(channel)

    def set_python_version(self, version: str) -> None:
        self.python_version = version

    def _mapping(self, pip: list[str]) -> dict[str, Any]:
        deps: list[Any] = [f"python={self.python_version}"] if self.python_version else []
        deps += [*self.conda_packages, "pip"]
        if pip:
            deps.append({"pip": pip})
        return {"name": "project_environment", "channels": self.channels, "dependencies": deps}

    def as_dict(self) -> dict[str, Any]:
        """The conda file as Azure writes it."""
        return self._mapping(self.pip_packages)

    def prsd_mapping(self) -> dict[str, Any] | None:
        """The conda file without Azure's SDK packages; None when nothing else is asked."""
        pip = [p for p in self.pip_packages if not is_sdk_package(p)]
        if not pip and not self.conda_packages and not self.python_version:
            return None
        return self._mapping(pip)

    def serialize_to_string(self) -> str:
        return yaml.safe_dump(self.as_dict(), sort_keys=False)

    def save(self, path: str | None = None) -> str:
        target = path or "conda_dependencies.yml"
        Path(target).write_text(self.serialize_to_string(), encoding="utf-8")
        return target

    save_to_file = save


__getattr__ = module_getattr("azureml.core.conda_dependencies")
