"""``--set KEY=VALUE``: az ml's overrides of a job YAML, parsed and applied (pure).

``KEY`` is a dotted path into the YAML mapping, with ``[i]`` for list items:
``retry_settings.timeout=120``, ``task.program_arguments="--x 1"``,
``inputs.data.path=/data/new``, ``input_data[0]=/data/a``. ``VALUE`` is read as a YAML
scalar or flow collection (``120`` is an int, ``true`` a bool, ``[a, b]`` a list,
``{a: 1}`` a mapping); text that is not valid YAML, and an empty value, stay strings.

Invariant: applying overrides never changes the mapping it is given (a copy is made)
and each override is applied in order, so a later one wins. Missing mappings on the
way are created (``retry_settings.timeout`` on a YAML without ``retry_settings``);
whether the resulting key is a job key is for the spec loader to say, with its usual
error naming the key. Errors: :class:`~prsd.errors.JobSpecError` naming the override,
for text without ``=``, a malformed path, a list index out of range, and a path that
goes through a scalar or indexes a mapping.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

import yaml

from prsd.errors import JobSpecError

_SEGMENT = re.compile(r"([^.\[\]]+)((?:\[\d+\])*)")
_INDEX = re.compile(r"\[(\d+)\]")

Step = str | int


@dataclass(frozen=True)
class Override:
    """One ``--set``: the path to the value and the value itself."""

    text: str
    path: tuple[Step, ...]
    value: Any


def _error(text: str, why: str) -> JobSpecError:
    return JobSpecError(text.split("=", 1)[0], "--set", why)


def parse_path(key: str, text: str = "") -> tuple[Step, ...]:
    """``a.b[0].c`` -> ``("a", "b", 0, "c")``.

    Raises:
        JobSpecError: an empty segment, stray brackets or characters.
    """
    path: list[Step] = []
    for part in key.split("."):
        m = _SEGMENT.fullmatch(part.strip())
        if m is None:
            raise _error(
                text or key, f"{key!r} is not a path like task.program_arguments or a.b[0]"
            )
        path.append(m.group(1))
        path.extend(int(i) for i in _INDEX.findall(m.group(2)))
    return tuple(path)


def parse_value(raw: str) -> Any:
    """A YAML-typed value; text that YAML cannot read stays text."""
    if raw == "":
        return ""
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw
    return raw if value is None and raw.strip() not in ("null", "~") else value


def parse_override(text: str) -> Override:
    """Parse ``KEY=VALUE``.

    Raises:
        JobSpecError: no ``=``, or a malformed key.
    """
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise _error(text, f"{text!r} is not KEY=VALUE (e.g. retry_settings.timeout=120)")
    return Override(text, parse_path(key.strip(), text), parse_value(raw))


def apply_overrides(data: dict[str, Any], overrides: list[Override]) -> dict[str, Any]:
    """A copy of ``data`` with every override applied in order.

    Raises:
        JobSpecError: a path that cannot be followed (see the module docstring).
    """
    out = copy.deepcopy(data)
    for ov in overrides:
        _apply(out, ov)
    return out


def _apply(root: dict[str, Any], ov: Override) -> None:
    node: Any = root
    for depth, step in enumerate(ov.path[:-1]):
        node = _child(node, step, ov.path[depth + 1], ov, depth)
    _set(node, ov.path[-1], ov, len(ov.path) - 1)


def _child(node: Any, step: Step, next_step: Step, ov: Override, depth: int) -> Any:
    _check(node, step, ov, depth)
    if isinstance(node, dict):
        assert isinstance(step, str)
        if node.get(step) is None:
            node[step] = [] if isinstance(next_step, int) else {}
        return node[step]
    assert isinstance(step, int)
    return node[step]


def _set(node: Any, step: Step, ov: Override, depth: int) -> None:
    _check(node, step, ov, depth)
    node[step] = ov.value


def _check(node: Any, step: Step, ov: Override, depth: int) -> None:
    where = _show(ov.path[:depth]) or "the job YAML"
    if isinstance(step, int):
        if not isinstance(node, list):
            raise _error(ov.text, f"{where} is not a list, so [{step}] cannot be set")
        if step >= len(node):
            raise _error(ov.text, f"{where} has {len(node)} items, so [{step}] does not exist")
    elif not isinstance(node, dict):
        raise _error(ov.text, f"{where} is a {type(node).__name__}, not a mapping with {step!r}")


def _show(path: tuple[Step, ...]) -> str:
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else step)
    return out
