"""``task.environment``'s files: what each node builds the workers' environment from.

Guarantees: the job's ``conda_file`` (a path in the job folder, or the mapping
inline) or ``requirements`` file is read once at intake, checked to parse
(:mod:`prsd.envs.spec`), and recorded whole in ``JobSpec.build_environment`` with the
path as written, so nodes build from what was submitted; a registered environment
(``azureml:<name>:<version>`` / ``@latest``) is recorded by name and resolved on the
nodes. ``python`` wins over all of them (those then listed as ignored); an ``image``
is recorded (:mod:`prsd.envs.image` names it as not used). Azure's SDK packages
(``azureml-*``) in a conda or requirements file are not installed, and a note says
which; so does a note for a python pin of a patch level (``python=3.7.6``: a node
without that patch level builds on its newest interpreter of the same minor and names
both versions in the build log and the job's main log). A ``-r FILE`` in either
(relative to the file naming it, inside the job folder) is read in at intake
(:mod:`prsd.envs.reqfiles`). Azure's curated names
(``azureml:AzureML-...``) build nothing unless registered in the spool.

:func:`conda_mapping` reads a pipeline step's conda file at submit, wherever it lies,
into the step's job file.

Errors: JobSpecError at the key: a file outside the job folder or missing, a file
that does not parse, both ``conda_file`` and ``requirements``, a ``python_mismatch``
other than ``error`` / ``warn``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from prsd.envs.interp import MISMATCH_MODES
from prsd.envs.registry import parse_reference
from prsd.envs.reqfiles import inline_conda, inline_requirements
from prsd.envs.spec import EnvError, Pin, left_out_note, parse_conda, parse_requirements
from prsd.jobspec import said
from prsd.jobspec.paths import local_text, stays_inside
from prsd.jobspec.values import as_str
from prsd.jobspec.yamlsafe import Setting, Site, read_limited

FILE_LIMIT = 1024 * 1024
FILE_KEYS = ("conda_file", "requirements")
CURATED = "AzureML-"  # the prefix of Azure's curated environment names


def is_registered(text: str) -> bool:
    """``azureml:<name>[:<version>|@latest]``: an environment registered in the spool."""
    try:
        parse_reference(text)
    except EnvError:
        return False
    return True


def environment_to_build(setting: Setting | None, base: Path) -> tuple[dict[str, Any], list[str]]:
    """``JobSpec.build_environment`` and the notes for the user (Azure SDK packages
    left out of a conda file).

    Raises:
        JobSpecError: see the module doc.
    """
    if setting is None or setting.value is None:
        return {}, []
    if isinstance(setting.value, str):
        name = setting.value.strip()
        if not is_registered(name):
            return {}, []
        if not parse_reference(name)[0].startswith(CURATED):
            return {"registered": name}, []
        return {"registered": name, "curated": True}, []
    if not isinstance(setting.value, dict) or "python" in setting.value:
        return {}, []
    entry: dict[str, Any] = setting.value
    site = setting.site
    out: dict[str, Any] = {}
    notes: list[str] = []
    files = [k for k in FILE_KEYS if entry.get(k) is not None]
    if len(files) > 1:
        raise site.error("names both conda_file and requirements; keep one")
    for key in files:
        text, source, folder = _read(entry[key], site.child(key), base)
        parse = parse_conda if key == "conda_file" else parse_requirements
        inline = inline_conda if key == "conda_file" else inline_requirements
        try:
            text = inline(text, folder, source, inside=base)
            spec = parse(text, source)
        except EnvError as exc:
            raise site.child(key).error(str(exc)) from None
        # an inline file's name is its key already ("<key> (inline)")
        where = source if isinstance(entry[key], dict) else f"{site.child(key).key} {source}"
        note = left_out_note(spec, where)
        notes += [said.note(said.ENVIRONMENT, note)] if note else []
        notes += _patch_pin_note(spec.python, where)
        out.update({key: text, "source": source})
    if entry.get("image") is not None:
        image = as_str(entry["image"], site.child("image"), "an image name")
        out["image"] = image  # named as not used by prsd run and the nodes (envs/image.py)
    if entry.get("python_mismatch") is not None:
        mode = as_str(entry["python_mismatch"], site.child("python_mismatch"), "error or warn")
        if mode not in MISMATCH_MODES:
            raise site.child("python_mismatch").error(f"expected error or warn, got {mode!r}")
        out["python_mismatch"] = mode
    return out, notes


def _patch_pin_note(pin: Pin | None, where: str) -> list[str]:
    """The note for a pin of a patch level, which a node may meet with another one."""
    if pin is None or pin.at_least or len(pin.version) < 3:
        return []
    minor = ".".join(map(str, pin.version[:2]))
    return [
        said.note(
            said.ENVIRONMENT,
            f"{where}: {pin} names a patch level; a node without it builds on its newest "
            f"Python {minor} and names both versions in the build log and the job's main log",
        )
    ]


def conda_mapping(text: str, site: Site, base: Path) -> dict[str, Any]:
    """The conda file ``text`` (relative to ``base``; anywhere, since it is read at submit
    as the user who submits) as a mapping, checked to parse: a pipeline step carries it
    in its job file as it carries its code.

    Raises:
        JobSpecError: at ``site``: a missing file, or one that is no conda environment.
    """
    path = Path(os.path.normpath(base / local_text(text)))
    if not path.is_file():
        raise site.error(f"{path} is not a file")
    try:
        raw = read_limited(path, FILE_LIMIT, what=site.key).decode("utf-8-sig")
        raw = inline_conda(raw, path.parent, str(path))
        parse_conda(raw, str(path))
        data = yaml.safe_load(raw)
    except EnvError as exc:
        raise site.error(str(exc)) from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise site.error(f"{path}: {exc}") from None
    if not isinstance(data, dict):
        raise site.error(f"{path}: expected a conda environment (a mapping)")
    return data


def _read(value: Any, site: Site, base: Path) -> tuple[str, str, Path]:
    """The file's text, its name as written, and the folder its ``-r`` paths mean."""
    if isinstance(value, dict):
        return yaml.safe_dump(value, sort_keys=False), f"{site.key} (inline)", base
    text = as_str(value, site, "a file in the job folder")
    path = base / text
    if not stays_inside(path, base):
        raise site.error(f"{text!r} leaves the job folder ({base})")
    if not path.is_file():
        raise site.error(f"{path} is not a file")
    data = read_limited(path, FILE_LIMIT, what=site.key)
    try:
        return data.decode("utf-8-sig"), text, path.parent
    except UnicodeDecodeError:
        raise site.error(f"{path} is not UTF-8 text") from None
