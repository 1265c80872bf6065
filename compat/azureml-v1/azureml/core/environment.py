"""``Environment``: what a step's workers run on, written as the step's ``environment``.

Guarantees: :meth:`Environment.prsd_environment` is, in this order, the configured
interpreter (``prsd.python``: nothing built), the conda file without Azure's SDK
packages (built on each node, docs/environments.md), or None (the agent's own Python).
A docker base image is kept and listed by prsd as not used; Spark settings are kept and
not used.
"""

from __future__ import annotations

from typing import Any

from azureml._prsd.unsupported import Surface, module_getattr
from azureml.core.conda_dependencies import CondaDependencies


class PythonSection(Surface):
    """``env.python``: its conda dependencies and interpreter path."""

    def __init__(self) -> None:
        self.conda_dependencies = CondaDependencies()
        self.interpreter_path = "python"
        self.user_managed_dependencies = False


class DockerSection(Surface):
    """``env.docker``: a base image prsd does not use."""

    def __init__(self) -> None:
        self.base_image: str | None = None
        self.enabled = False


class SparkSection(Surface):
    """``env.spark``: Spark settings prsd does not use."""

    def __init__(self) -> None:
        self.repositories: list[str] = []
        self.packages: list[str] = []
        self.precache_packages = True


class Environment(Surface):
    """A named environment."""

    def __init__(self, name: str, _skip_validation: bool = False) -> None:
        self.name = name
        self.version: str | None = None
        self.python = PythonSection()
        self.docker = DockerSection()
        self.spark = SparkSection()
        self.environment_variables: dict[str, str] = {}

    @staticmethod
    def from_conda_specification(name: str, file_path: str) -> Environment:
        env = Environment(name)
        env.python.conda_dependencies = CondaDependencies(file_path)
        return env

    @staticmethod
    def from_pip_requirements(
        name: str, file_path: str, pip_version: str | None = None
    ) -> Environment:
        env = Environment(name)
        with open(file_path, encoding="utf-8") as f:
            lines = [ln.strip() for ln in f if ln.strip() and not ln.lstrip().startswith("#")]
        env.python.conda_dependencies = CondaDependencies.create(pip_packages=lines)
        return env

    def prsd_environment(self, python: str) -> dict[str, Any] | None:
        """The step's ``environment`` mapping (see the module docstring)."""
        if python:
            return {"python": python}
        if self.python.user_managed_dependencies and self.python.interpreter_path != "python":
            return {"python": self.python.interpreter_path}
        conda = self.python.conda_dependencies.prsd_mapping()
        if conda is None:
            return None
        env: dict[str, Any] = {"conda_file": conda}
        if self.docker.base_image:
            env["image"] = self.docker.base_image
        return env

    def __repr__(self) -> str:
        return f"Environment(name={self.name!r})"


__getattr__ = module_getattr("azureml.core.environment")
