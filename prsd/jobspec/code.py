"""The code side of a job: code folder, entry script, worker Python, settings file.

Guarantees: the code folder exists (the ``code/`` snapshot when the job was submitted
from elsewhere); the entry script is a file inside it or a dotted module that resolves
to a ``.py`` file or package inside it; a ``task.environment.python`` interpreter exists
and is executable; ``parallel_run_step.settings.json`` holds keyword arguments that
``pandas.DataFrame.to_csv`` accepts, never ``path_or_buf`` or ``mode``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from prsd.errors import JobSpecError
from prsd.jobspec.envfiles import FILE_KEYS, is_registered
from prsd.jobspec.paths import Roots, inside, is_remote, resolve, stays_inside
from prsd.jobspec.schema import ENVIRONMENT_AZURE_ONLY, check_entry_keys
from prsd.jobspec.values import as_mapping, as_str, shown, suggest
from prsd.jobspec.yamlsafe import Setting, Site, read_limited
from prsd.spool.jsonobject import NotAnObject, decode_object
from prsd.spool.layout import JobLayout

SETTINGS_FILE = "parallel_run_step.settings.json"
ENVIRONMENT_KEYS = frozenset({"python", *FILE_KEYS, "image", "python_mismatch"})
_MODULE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
TO_CSV_KWARGS = frozenset(
    {
        "sep",
        "na_rep",
        "float_format",
        "columns",
        "header",
        "index",
        "index_label",
        "encoding",
        "compression",
        "quoting",
        "quotechar",
        "lineterminator",
        "chunksize",
        "date_format",
        "doublequote",
        "escapechar",
        "decimal",
        "errors",
        "storage_options",
    }
)
_OWNED_BY_PRSD = ("path_or_buf", "mode")


def code_folder(
    setting: Setting | None, job_dir: Path, snapshot: bool, roots: Roots, job_site: Site
) -> Path:
    """The code folder: ``task.code`` (v1 ``source_directory``), else the job folder.

    Args:
        setting: ``task.code`` if given.
        job_dir: the folder holding the job file.
        snapshot: the job was submitted from elsewhere; its code is ``job_dir/code``.
        roots: the allowed roots.
        job_site: the job's mapping, where errors point when ``task.code`` is absent.

    Raises:
        JobSpecError: not a local folder, outside the job folder or allowed roots, or
            missing.
    """
    site = setting.site if setting is not None else job_site.labelled("task.code")
    text = None
    if setting is not None:
        text = as_str(setting.value, site, "the code folder's path")
        if is_remote(text):
            raise site.error(f"{text!r} is not a local folder")
    if snapshot:
        return _folder(JobLayout(job_dir, job_dir.name).code, "the job's code snapshot", site)
    if text is None:
        return job_dir
    return _folder(resolve(job_dir, text, roots, site), "the code folder", site)


def _folder(folder: Path, what: str, site: Site) -> Path:
    if not folder.is_dir():
        raise site.error(f"{what} {folder} is missing or not a folder")
    return folder


def entry_script(setting: Setting, code_dir: Path) -> str:
    """The entry script as stored: a normalised relative path or a dotted module name.

    Raises:
        JobSpecError: absolute, leaving the code folder, or found neither as a file nor
            as a module in the code folder.
    """
    site = setting.site
    text = as_str(setting.value, site, "a file in the code folder (score.py) or a module name")
    if Path(text).is_absolute():
        raise site.error(f"expected a path relative to the code folder ({code_dir}), got {text!r}")
    candidate = inside(code_dir, text, site, "code folder")
    if candidate.is_file():
        return candidate.relative_to(code_dir).as_posix()
    if _MODULE.match(text) and not text.endswith(".py") and _module_file(code_dir, text):
        return text
    scripts = sorted(p.name for p in code_dir.glob("*.py"))
    raise site.error(
        f"{text!r} is not a file or module in the code folder {code_dir}" + suggest(text, scripts)
    )


def _module_file(code_dir: Path, name: str) -> bool:
    stem = code_dir.joinpath(*name.split("."))
    return stem.with_name(stem.name + ".py").is_file() or (stem / "__init__.py").is_file()


def worker_python(setting: Setting | None, base: Path) -> tuple[str | None, list[str]]:
    """``task.environment``: the workers' interpreter, and the Azure-only keys met.

    The files an environment is built from (``conda_file``, ``requirements``) and a
    registered name (``azureml:env@latest``) are read by
    :mod:`prsd.jobspec.envfiles`; with a ``python`` they are listed as ignored, as are
    Azure's other keys (``name``, ``build`` ...).

    Raises:
        JobSpecError: an unknown key, or a ``python`` that is not an executable file.
    """
    if setting is None or setting.value is None:
        return None, []
    if isinstance(setting.value, str):
        return None, [] if is_registered(setting.value) else [setting.site.key]
    entry = as_mapping(
        setting.value, setting.site, "{python: /path/to/bin/python} or an Azure environment"
    )
    ignored = check_entry_keys(entry, setting.site, ENVIRONMENT_KEYS, ENVIRONMENT_AZURE_ONLY)
    if "python" not in entry:
        return None, ignored
    unused = [setting.site.child(k).key for k in FILE_KEYS if k in entry]
    return _interpreter(entry["python"], setting.site.child("python"), base), ignored + unused


def _interpreter(value: Any, site: Site, base: Path) -> str:
    text = as_str(value, site, "the path of a Python interpreter")
    # A venv's python is a symlink out of the venv, so only the written path is checked.
    path = Path(os.path.normpath(base / text))
    if not Path(text).is_absolute() and not path.is_relative_to(base):
        raise site.error(f"{text!r} leaves the job folder ({base})")
    if not path.is_file() or not os.access(path, os.X_OK):
        raise site.error(f"{path} is not an executable file")
    return str(path)


def to_csv_settings(code_dir: Path) -> dict[str, Any]:
    """The ``to_csv`` overrides of ``parallel_run_step.settings.json`` in the code folder.

    Raises:
        JobSpecError: (located in that file) not JSON, not an object of ``to_csv``
            keyword arguments, or one that prsd owns (``path_or_buf``, ``mode``).
    """
    path = code_dir / SETTINGS_FILE
    if not path.exists():
        return {}
    if not stays_inside(path, code_dir):
        raise JobSpecError("", str(path), "is a symlink leading outside the code folder")
    raw = read_limited(path, 1024 * 1024, what="settings file")
    try:
        data = decode_object(raw.decode("utf-8-sig"))
    except NotAnObject as exc:
        raise JobSpecError(
            "", str(path), f"expected a JSON object, got {shown(exc.value)}"
        ) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise JobSpecError("", str(path), f"not valid JSON: {exc}") from None
    return _to_csv_kwargs(data, path)


def _to_csv_kwargs(data: Any, path: Path) -> dict[str, Any]:
    key = "append_row.pandas.DataFrame.to_csv"
    if not isinstance(data, dict):
        raise JobSpecError("", str(path), f"expected a JSON object, got {shown(data)}")
    section = data.get("append_row", {})
    if not isinstance(section, dict):
        raise JobSpecError("append_row", str(path), f"expected an object, got {shown(section)}")
    kwargs = section.get("pandas.DataFrame.to_csv", {})
    if not isinstance(kwargs, dict):
        raise JobSpecError(
            key, str(path), f"expected an object of keyword arguments, got {shown(kwargs)}"
        )
    for name in kwargs:
        if name in _OWNED_BY_PRSD:
            raise JobSpecError(
                f"{key}.{name}", str(path), "is set by prsd and cannot be overridden"
            )
        if name not in TO_CSV_KWARGS:
            problem = f"not a keyword argument of to_csv{suggest(name, TO_CSV_KWARGS)}"
            raise JobSpecError(f"{key}.{name}", str(path), problem)
    return dict(kwargs)
