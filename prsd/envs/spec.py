"""What a job's environment file asks for, parsed and hashed without any I/O.

Invariant: :func:`parse_conda` and :func:`parse_requirements` turn the text of a
conda YAML file (Azure's ``conda_file``) or a ``requirements.txt``-style file into an
:class:`EnvSpec` whose :meth:`EnvSpec.key` depends only on what would be installed
(comments, blank lines, the file's ``name`` and the order of conda packages do not
change it), so two jobs with the same needs share one built environment per node.

Conda-only packages become PyPI requirements of the same name (``numpy=1.26`` ->
``numpy==1.26.*``); ``python`` and ``pip`` are never installed as packages: the
``python`` entry is the interpreter pin. Azure's own SDK packages (``azureml-*``,
:mod:`prsd.envs.azureonly`) are left out of a conda or requirements file and listed in
:attr:`EnvSpec.left_out`, which :func:`left_out_note` words for the user.

Errors: :class:`EnvError` (one line) for a file that does not parse, a section of
the wrong type, a package spec that cannot be read, or a requirement that is a URL
or a path (the daemons never fetch or read what a job names).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from prsd.envs.azureonly import constraints_of, is_azure_only

_CONDA_SPEC = re.compile(r"^(?:[\w.-]+::)?([A-Za-z0-9_.\-]+)\s*(.*)$")
_PIN = re.compile(r"^(\d+(?:\.\d+){0,2})(?:\.\*)?$")
SKIPPED = frozenset({"python", "pip"})
# A PyPI requirement: name, extras, version specifiers, a marker; never a URL or a path,
# which would have the daemons read or fetch what the job names.
_REQUIREMENT = re.compile(
    r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?\s*(?:\[[A-Za-z0-9._,\s-]*\])?"
    r"\s*(?:(?:===|==|!=|~=|<=|>=|<|>)\s*[A-Za-z0-9.*+!_-]+\s*,?\s*)*(?:;[^@]*)?$"
)


class EnvError(Exception):
    """An environment that cannot be read or built; the message is one line."""


@dataclass(frozen=True)
class Pin:
    """The ``python`` a file asks for: ``exact`` (a version prefix) or ``at_least``."""

    version: tuple[int, ...]
    at_least: bool = False

    def matches(self, found: tuple[int, ...]) -> bool:
        if self.at_least:
            return found >= self.version
        return found[: len(self.version)] == self.version

    def __str__(self) -> str:
        text = ".".join(map(str, self.version))
        return f"python>={text}" if self.at_least else f"python={text}"


@dataclass(frozen=True)
class EnvSpec:
    """An environment to build.

    Attributes:
        kind: ``conda`` or ``requirements`` (the file it came from).
        text: the file as written (a conda tool is given it unchanged).
        python: the interpreter pin, None when the file names none.
        pip: PyPI requirements in install order.
        from_conda: those of ``pip`` that were conda packages (said in the build log).
        channels: the conda channels named.
        left_out: Azure SDK packages of the file that are not installed.
        constraints: the pins those packages put on others, kept as constraints
            (:func:`prsd.envs.azureonly.constraints_of`).
    """

    kind: str
    text: str
    python: Pin | None = None
    pip: tuple[str, ...] = ()
    from_conda: tuple[str, ...] = ()
    channels: tuple[str, ...] = field(default=())
    left_out: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()

    def key(self, interpreter: str) -> str:
        """The cache key: what is installed, on which interpreter (path and version)."""
        body = {
            "python": str(self.python) if self.python else None,
            "pip": list(self.pip),
            "interpreter": interpreter,
        }
        if self.constraints:  # absent otherwise: the keys of earlier builds stay
            body["constraints"] = list(self.constraints)
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        return digest[:24]


def parse_conda(text: str, where: str = "conda file") -> EnvSpec:
    """Read a conda environment YAML file.

    Raises:
        EnvError: not YAML, not a mapping, ``dependencies`` not a list, a bad entry.
    """
    import yaml  # here: an agent serving jobs without a conda file never loads it

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise EnvError(f"{where} is not valid YAML{at}: {problem}") from None
    if not isinstance(data, dict):
        raise EnvError(f"{where} must be a mapping with 'dependencies', got {_kind(data)}")
    channels = data.get("channels") or []
    deps = data.get("dependencies") or []
    if not isinstance(deps, list):
        raise EnvError(f"{where}: 'dependencies' must be a list, got {_kind(deps)}")
    if not isinstance(channels, list):
        raise EnvError(f"{where}: 'channels' must be a list, got {_kind(channels)}")
    python: Pin | None = None
    conda: list[str] = []
    pip: list[str] = []
    for dep in deps:
        if isinstance(dep, dict) and set(dep) == {"pip"} and isinstance(dep["pip"], list):
            pip.extend(_pip_line(str(p), where) for p in dep["pip"] if str(p).strip())
            continue
        if not isinstance(dep, str):
            raise EnvError(f"{where}: a dependency must be a string or {{pip: [...]}}, got {dep!r}")
        name, rest = _split_conda(dep, where)
        if name == "python":
            python = parse_pin(rest, where) if rest else None
        elif name not in SKIPPED:
            conda.append(_pip_line(_conda_to_pip(name, rest), where))
    conda.sort()
    left_out = tuple(p for p in (*conda, *pip) if is_azure_only(p))
    conda = [p for p in conda if not is_azure_only(p)]
    pip = [p for p in pip if not is_azure_only(p)]
    return EnvSpec(
        "conda",
        text,
        python,
        (*conda, *pip),
        tuple(conda),
        tuple(map(str, channels)),
        left_out,
        _constraints(left_out),
    )


def left_out_note(spec: EnvSpec, where: str) -> str:
    """The line that says which Azure SDK packages are not installed ("" when none)."""
    if not spec.left_out:
        return ""
    kept = (
        f"; the pins they hold others to are kept: {', '.join(spec.constraints)}"
        if spec.constraints
        else ""
    )
    return (
        f"{where}: {', '.join(spec.left_out)} left out: Azure's SDK packages are not installed "
        f"(workers import prsd's own azureml.core){kept}"
    )


def _constraints(left_out: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(pin for p in left_out for pin in constraints_of(p)))


def parse_requirements(text: str, where: str = "requirements file") -> EnvSpec:
    """Read a ``requirements.txt``-style file (``# python=3.11`` on a line pins python);
    Azure's SDK packages are left out as from a conda file.

    Raises:
        EnvError: an option line (``-r``, ``-e``, ``--index-url`` ...), which would let
            one job's file change where every job's packages come from.
    """
    python: Pin | None = None
    pip: list[str] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        pinned = re.match(r"^#\s*python\s*(.*)$", line)
        if pinned:
            python = parse_pin(pinned.group(1), f"{where} line {number}")
            continue
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-"):
            raise EnvError(
                f"{where} line {number}: options such as {line.split()[0]} are not allowed"
            )
        pip.append(_pip_line(line, f"{where} line {number}"))
    left_out = tuple(p for p in pip if is_azure_only(p))
    kept = tuple(p for p in pip if not is_azure_only(p))
    return EnvSpec(
        "requirements", text, python, kept, left_out=left_out, constraints=_constraints(left_out)
    )


def parse_pin(text: str, where: str) -> Pin:
    """``=3.11``, ``==3.11.4``, ``3.11``, ``>=3.9``: the python pin.

    Raises:
        EnvError: any other form (a build string, a range with an upper bound).
    """
    value = text.strip()
    at_least = value.startswith(">=")
    value = value[2:] if at_least else value.lstrip("=").split("=", 1)[0]
    m = _PIN.match(value.strip())
    if not m:
        raise EnvError(f"{where}: cannot read the python pin {text.strip()!r} (use python=3.11)")
    version = tuple(int(p) for p in m.group(1).split("."))
    return Pin(version, at_least=at_least)


def _split_conda(dep: str, where: str) -> tuple[str, str]:
    m = _CONDA_SPEC.match(dep.strip())
    if not m:
        raise EnvError(f"{where}: cannot read the dependency {dep!r}")
    return m.group(1).lower(), m.group(2).strip()


def _conda_to_pip(name: str, rest: str) -> str:
    """``numpy=1.26`` -> ``numpy==1.26.*``; a build string after a second ``=`` is dropped."""
    if not rest:
        return name
    if rest.startswith("=") and not rest.startswith("=="):
        version = rest[1:].split("=", 1)[0]
        return f"{name}=={version}" if version.endswith("*") else f"{name}=={version}.*"
    if rest[0].isdigit():
        return f"{name}=={rest.split()[0]}.*"
    return f"{name}{rest.replace(' ', '')}"


def _pip_line(line: str, where: str) -> str:
    line = line.strip()
    if line.startswith("-"):
        raise EnvError(f"{where}: pip options such as {line.split()[0]} are not allowed")
    if not _REQUIREMENT.match(line):
        raise EnvError(
            f"{where}: {line!r} is not a package name with an optional version "
            "(URLs, paths and 'name @ url' are not allowed)"
        )
    return line


def _kind(value: Any) -> str:
    return "nothing" if value is None else type(value).__name__


def wanted(build_environment: dict[str, Any]) -> bool:
    """Whether the job names an environment to build (not an image alone)."""
    return any(k in build_environment for k in ("conda_file", "requirements", "registered"))
