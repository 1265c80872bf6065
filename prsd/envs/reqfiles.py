"""``-r FILE`` in an environment file, read at submission into the file itself.

Invariant: :func:`inline_conda` and :func:`inline_requirements` return the text of a
conda file (its ``pip:`` section) or a ``requirements.txt``-style file with every
``-r FILE`` / ``--requirement FILE`` entry replaced by FILE's requirement lines (relative
to the file that names it, nested ``-r`` followed), so what the nodes build is recorded
whole at submission: the daemons never read a file a job names. A text without such an
entry is returned unchanged (byte for byte); a conda file that has one is written back
as YAML (its comments are not kept). What the included lines ask for is then checked
by :mod:`prsd.envs.spec` as if written in place (Azure's ``azureml-*`` packages among
them are left out, with the same note).

:func:`included_files` lists the files such a text names (nested ``-r`` followed), for
a pipeline's command step to carry them beside its copy of the conda file.

Errors: :class:`~prsd.envs.spec.EnvError` (one line) naming the entry: a file that is
missing, not UTF-8, larger than the limit, outside ``inside`` (when given), or
included from itself; more than :data:`MAX_DEPTH` levels.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from prsd.envs.spec import EnvError

MAX_DEPTH = 8
FILE_LIMIT = 1024 * 1024
_INCLUDE = re.compile(r"^(?:-r|--requirement)(?:\s*=\s*|\s+|(?=[^\s=-]))(\S+)\s*$")


def include_of(entry: str) -> str | None:
    """``-r reqs.txt``, ``-rreqs.txt``, ``--requirement=reqs.txt``: ``reqs.txt``; else None."""
    m = _INCLUDE.match(entry.strip())
    return m.group(1) if m else None


def inline_conda(text: str, folder: Path, where: str, *, inside: Path | None = None) -> str:
    """The conda file ``text`` (in ``folder``) with its ``-r`` entries read in.

    Raises:
        EnvError: see the module doc (a file that is not YAML is left to the parser).
    """
    import yaml  # here: only a job with an environment file reads one

    if "-r" not in text and "--requirement" not in text:
        return text
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return text  # the parser says where
    deps = data.get("dependencies") if isinstance(data, dict) else None
    if not isinstance(deps, list):
        return text
    changed = False
    for dep in deps:
        if isinstance(dep, dict) and isinstance(dep.get("pip"), list):
            lines: list[Any] = []
            for entry in dep["pip"]:
                name = include_of(str(entry))
                if name is None:
                    lines.append(entry)
                    continue
                lines += _read_lines(folder, name, where, inside, ())
                changed = True
            dep["pip"] = lines
    if not changed:
        return text
    return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def inline_requirements(text: str, folder: Path, where: str, *, inside: Path | None = None) -> str:
    """The ``requirements.txt``-style ``text`` (in ``folder``) with its ``-r`` lines read in.

    Raises:
        EnvError: see the module doc.
    """
    if not any(include_of(line) for line in text.splitlines()):
        return text
    out: list[str] = []
    for line in text.splitlines():
        name = include_of(line)
        out += [line] if name is None else _read_lines(folder, name, where, inside, ())
    return "\n".join(out) + "\n"


def included_files(
    text: str, folder: Path, where: str, *, conda: bool, inside: Path, inside_name: str
) -> list[Path]:
    """Every file the conda (``conda``) or requirements ``text`` in ``folder`` names by
    ``-r``, nested ones too, in the order read; each must lie in ``inside`` (called
    ``inside_name`` in the error).

    Raises:
        EnvError: see the module doc.
    """
    found: list[Path] = []
    names: list[str] = []
    if conda:
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError:
            return []  # the parser says where, when the step is loaded
        deps = data.get("dependencies") if isinstance(data, dict) else None
        for dep in deps if isinstance(deps, list) else []:
            if isinstance(dep, dict) and isinstance(dep.get("pip"), list):
                names += [n for e in dep["pip"] if (n := include_of(str(e))) is not None]
    else:
        names = [n for line in text.splitlines() if (n := include_of(line)) is not None]
    for name in names:
        _read_lines(folder, name, where, inside, (), found, inside_name)
    return list(dict.fromkeys(found))


def _read_lines(
    folder: Path,
    name: str,
    where: str,
    inside: Path | None,
    seen: tuple[Path, ...],
    found: list[Path] | None = None,
    inside_name: str = "the job folder",
) -> list[str]:
    """FILE's requirement lines (comments and blank lines dropped, its ``-r`` followed);
    each file read is added to ``found``."""
    path = Path(os.path.normpath(folder / os.path.expanduser(name)))
    shown = f"{where}: -r {name}"
    if len(seen) >= MAX_DEPTH:
        raise EnvError(f"{shown}: more than {MAX_DEPTH} levels of -r")
    if path in seen:
        raise EnvError(f"{shown}: {path} includes itself")
    if inside is not None and not Path(os.path.realpath(path)).is_relative_to(
        os.path.realpath(inside)
    ):
        raise EnvError(f"{shown}: {path} is outside {inside_name} ({inside})")
    try:
        with path.open("rb") as f:
            data = f.read(FILE_LIMIT + 1)
    except OSError as exc:
        raise EnvError(f"{shown}: cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > FILE_LIMIT:
        raise EnvError(f"{shown}: {path} is larger than {FILE_LIMIT} bytes")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise EnvError(f"{shown}: {path} is not UTF-8 text") from None
    if found is not None:
        found.append(path)
    lines: list[str] = []
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        nested = include_of(line)
        if nested is None:
            lines.append(line)
        else:
            deeper = (*seen, path)
            lines += _read_lines(path.parent, nested, str(path), inside, deeper, found, inside_name)
    return lines
