"""Registered environments: Azure environment YAML files kept in the spool.

Invariant: ``<spool>/environments/<name>/<version>.yaml`` holds one environment in the
schema of ``az ml environment create -f`` (``name``, ``version``, ``image``,
``conda_file``), self-contained: a ``conda_file`` path is read at registration and
stored inline, so every node resolves the same thing. Files are written whole
(prsd.spool.atomic); a version once registered is never rewritten.

Errors: :class:`~prsd.envs.spec.EnvError` (one line): a reference that does not read,
an unknown name (the known ones listed), an unknown version (the known ones listed),
a file to register that is not an environment.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from prsd.envs.spec import EnvError, parse_conda
from prsd.spool.atomic import create_exclusive

if TYPE_CHECKING:
    from pathlib import Path

_REF = re.compile(r"^azureml:(?P<name>[A-Za-z0-9][\w.-]*)(?:(?::(?P<version>[\w.-]+))|@latest)?$")
_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*$")


def parse_reference(text: str) -> tuple[str, str]:
    """``azureml:name:version`` / ``azureml:name@latest`` / ``azureml:name`` -> (name, version).

    Raises:
        EnvError: any other form.
    """
    m = _REF.match(text.strip())
    if not m:
        raise EnvError(f"{text!r} is not an environment reference (azureml:<name>:<version>)")
    return m.group("name"), m.group("version") or "latest"


def folder(spool: Path) -> Path:
    return spool / "environments"


def known(spool: Path) -> dict[str, list[str]]:
    """Registered names and their versions, oldest first."""
    out: dict[str, list[str]] = {}
    root = folder(spool)
    if not root.is_dir():
        return out
    for d in sorted(root.iterdir()):
        versions = sorted((p.stem for p in d.glob("*.yaml")), key=_version_order)
        if versions:
            out[d.name] = versions
    return out


def lookup(spool: Path, name: str, version: str) -> dict[str, Any]:
    """The registered environment's YAML mapping.

    Raises:
        EnvError: unknown name or version (the known ones listed), or a bad file.
    """
    names = known(spool)
    if name not in names:
        listed = ", ".join(sorted(names)) or "none are registered"
        raise EnvError(f"unknown environment {name!r}; known: {listed} (prsctl env list)")
    if version == "latest":
        version = names[name][-1]
    if version not in names[name]:
        listed = ", ".join(names[name])
        raise EnvError(f"environment {name!r} has no version {version!r}; known: {listed}")
    path = folder(spool) / name / f"{version}.yaml"
    return _load(path.read_text(encoding="utf-8"), str(path))


def register(spool: Path, file: Path) -> tuple[str, str]:
    """Store the environment in ``file`` (its ``conda_file`` read in); returns name, version.

    Raises:
        EnvError: not an environment file, a conda file that does not parse, or the
            version already registered.
        OSError: the file or the spool cannot be read or written.
    """
    data = _load(file.read_text(encoding="utf-8"), str(file))
    name = str(data.get("name") or "")
    if not _NAME.match(name):
        raise EnvError(f"{file}: 'name' must be a plain name, got {name!r}")
    import yaml  # in functions: an agent that reads no environment never loads it

    conda = data.get("conda_file")
    if isinstance(conda, str):
        conda_path = (file.parent / conda).resolve()
        text = conda_path.read_text(encoding="utf-8")
        parse_conda(text, str(conda_path))
        data["conda_file"] = yaml.safe_load(text)
    if not data.get("conda_file") and not data.get("image"):
        raise EnvError(f"{file}: an environment needs 'conda_file' or 'image'")
    versions = known(spool).get(name, [])
    version = str(data.get("version") or _next(versions))
    if not _NAME.match(version):
        raise EnvError(f"{file}: 'version' must be a plain version, got {version!r}")
    data["version"] = version
    target = folder(spool) / name / f"{version}.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    body = yaml.safe_dump(data, sort_keys=False).encode()
    if not create_exclusive(target, body):
        raise EnvError(f"environment {name}:{version} is already registered")
    return name, version


def conda_text(data: dict[str, Any]) -> str | None:
    """The registered environment's conda file as YAML text (None: image only)."""
    import yaml

    conda = data.get("conda_file")
    return None if not conda else yaml.safe_dump(conda, sort_keys=False)


def _load(text: str, where: str) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise EnvError(f"{where} is not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise EnvError(f"{where} is not an environment (expected a mapping)")
    return data


def _version_order(version: str) -> tuple[int, int | str]:
    return (0, int(version)) if version.isdigit() else (1, version)


def _next(versions: list[str]) -> str:
    numbers = [int(v) for v in versions if v.isdigit()]
    return str(max(numbers, default=0) + 1)
