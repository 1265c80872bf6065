"""Azure's ``${{...}}`` references and ``$[[...]]`` optional groups, expanded once.

Guarantees: a reference is replaced only by a value the spec declares (an input's
absolute path or literal text, an output's absolute path); an undeclared reference is
an error naming it, except inside an optional group, which is then dropped, as is a
group whose input is declared without a path or value. Pure: no file access.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from prsd.jobspec.yamlsafe import Setting, Site

if TYPE_CHECKING:
    from prsd.errors import JobSpecError

REF = re.compile(r"\$\{\{\s*([^{}]*?)\s*\}\}")
GROUP = re.compile(r"\$\[\[(.*?)\]\]", re.DOTALL)

# A reference table: "inputs.x" / "outputs.y" -> the text to put in, or None when the
# name is declared without a path or value (absent).
Refs = Mapping[str, str | None]


def exact_ref(text: Any) -> str | None:
    """The name in a value that is exactly one reference (``${{inputs.x}}`` -> ``inputs.x``)."""
    if not isinstance(text, str):
        return None
    match = REF.fullmatch(text.strip())
    return match.group(1) if match else None


def tidy_refs(text: str) -> str:
    """``text`` with no spaces inside references, so each is one word when split."""
    return REF.sub(lambda m: "${{" + m.group(1) + "}}", text)


def has_ref(text: str) -> bool:
    """True when ``text`` holds a ``${{...}}`` reference."""
    return REF.search(text) is not None


def undefined(name: str, site: Site) -> JobSpecError:
    """The error for a reference to something the spec does not declare."""
    if name.startswith("parent.jobs."):
        return site.error(
            f"${{{{{name}}}}} refers to another pipeline step; prsd runs the parallel step "
            "alone, so give the data's local path instead"
        )
    section = name.partition(".")[0]
    if section == "parent":
        return site.error(
            f"${{{{{name}}}}} can only bind the step's inputs: and outputs:; bind it there "
            "and refer to it as ${{inputs.NAME}} or ${{outputs.NAME}}"
        )
    if section in ("inputs", "outputs"):
        return site.error(f"${{{{{name}}}}} is not declared; declare it under {section}:")
    return site.error(
        f"${{{{{name}}}}} is not supported by prsd; only ${{{{inputs.NAME}}}} and "
        "${{outputs.NAME}} can be referenced"
    )


def substitute(text: str, refs: Refs, site: Site) -> str:
    """``text`` with every reference replaced.

    Raises:
        JobSpecError: a reference that is not declared, or declared without a value
            (wrap such an argument in ``$[[...]]`` to make it optional).
    """

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in refs:
            raise undefined(name, site)
        value = refs[name]
        if value is None:
            raise site.error(
                f"${{{{{name}}}}} has no path or value; give one, or make the argument "
                f"optional with $[[... ${{{{{name}}}}}]]"
            )
        return value

    return REF.sub(one, text)


def expand_groups(text: str, refs: Refs, site: Site) -> str:
    """``text`` with each ``$[[...]]`` group kept (unwrapped) or dropped.

    A group is dropped when one of its references is undeclared or has no value.

    Raises:
        JobSpecError: a ``$[[`` without its closing ``]]``.
    """

    def one(match: re.Match[str]) -> str:
        inner = match.group(1)
        names = REF.findall(inner)
        present = all(refs.get(name) is not None for name in names)
        return inner if present else " "

    expanded = GROUP.sub(one, text)
    if "$[[" in expanded:
        raise site.error("an optional group $[[ ... has no closing ]]")
    return expanded


def bind_literals(settings: dict[str, Setting], literals: Mapping[str, Any]) -> dict[str, Setting]:
    """Settings whose whole value is a reference to a literal input, replaced by the literal.

    Azure lets a step bind ``resources.instance_count: ${{parent.inputs.nodes}}``;
    environment variable values may be bound the same way.

    Raises:
        JobSpecError: a setting that is exactly a reference to something that is not a
            literal input.
    """
    out = {}
    for key, setting in settings.items():
        value = setting.value
        if isinstance(value, dict) and key.endswith("environment_variables"):
            value = {k: _literal(v, literals, setting.site.child(k)) for k, v in value.items()}
        else:
            value = _literal(value, literals, setting.site)
        out[key] = Setting(value, setting.site)
    return out


def _literal(value: Any, literals: Mapping[str, Any], site: Site) -> Any:
    name = exact_ref(value)
    if name is None:
        return value
    if name not in literals:
        raise site.error(
            f"${{{{{name}}}}} is not a literal input declared with a value; "
            "only literal inputs can set this key"
        )
    return literals[name]
