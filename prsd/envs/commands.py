"""The command lines a build runs, and the package index settings handed to uv; pure.

Invariant: nothing here runs anything or reads a file it is not given; every command
is a list of arguments (never a shell string), so a package name from a job's file
is always one argument and never shell text.

- uv: ``uv venv --relocatable --python INTERP DIR`` then
  ``uv pip install --python DIR/bin/python -r REQS``; a relocatable venv can be built
  in a temporary folder and published by rename.
- conda / mamba / micromamba: ``env create -p PREFIX -f FILE`` (micromamba:
  ``create -y -p PREFIX -f FILE``), the file as the job wrote it.
- containers (podman / docker): ``run --rm -i`` with the job folder and prsd's worker
  boot mounted at the same paths, the worker's environment passed by name.
"""

from __future__ import annotations

import configparser
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

CONDA_TOOLS = ("micromamba", "mamba", "conda")
CONTAINER_RUNTIMES = ("podman", "docker")


def uv_venv(uv: str, interpreter: str, prefix: str) -> list[str]:
    return [uv, "venv", "--relocatable", "--no-project", "--python", interpreter, prefix]


def uv_install(uv: str, prefix: str, requirements: str, *, wheels_only: bool) -> list[str]:
    """``wheels_only``: no source builds (they run the package's code as the builder)."""
    python = str(Path(prefix) / "bin" / "python")
    cmd = [uv, "pip", "install", "--no-progress", "--python", python, "-r", requirements]
    return [*cmd, "--only-binary", ":all:"] if wheels_only else cmd


def conda_create(tool: str, prefix: str, env_file: str) -> list[str]:
    """Create the environment at ``prefix`` from the job's conda file as written."""
    if Path(tool).name.startswith("micromamba"):
        return [tool, "create", "-y", "-p", prefix, "-f", env_file]
    return [tool, "env", "create", "-y", "-p", prefix, "-f", env_file]


def pip_index_env(environ: Mapping[str, str], config_texts: list[str]) -> dict[str, str]:
    """uv's index settings from pip's: its config files (lowest first) and ``PIP_*``.

    ``index-url`` -> ``UV_INDEX_URL``, ``extra-index-url`` -> ``UV_EXTRA_INDEX_URL``,
    ``find-links`` -> ``UV_FIND_LINKS``, ``cert`` -> ``SSL_CERT_FILE``; a ``file://``
    index or link folder that does not exist is left out (uv would fail on it). With
    extra indexes, uv picks the best version across all of them, as pip does.
    """
    merged: dict[str, str] = {}
    for text in config_texts:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(text)
        except configparser.Error:
            continue
        for section in ("global", "install"):
            if parser.has_section(section):
                merged.update(dict(parser.items(section)))
    for key in ("index-url", "extra-index-url", "find-links", "cert"):
        name = "PIP_" + key.upper().replace("-", "_")
        if environ.get(name):
            merged[key] = environ[name]
    out: dict[str, str] = {}
    pairs = (
        ("index-url", "UV_INDEX_URL"),
        ("extra-index-url", "UV_EXTRA_INDEX_URL"),
        ("find-links", "UV_FIND_LINKS"),
    )
    for key, name in pairs:
        kept = [u for u in merged.get(key, "").split() if _usable(u)]
        if kept:
            out[name] = (" " if name == "UV_EXTRA_INDEX_URL" else ",").join(kept)
    if "UV_EXTRA_INDEX_URL" in out:
        # pip takes the best version from all indexes; uv's default stops at the first
        # index that has the package, which a partial local mirror would cut short.
        out["UV_INDEX_STRATEGY"] = "unsafe-best-match"
    if merged.get("cert"):
        out["SSL_CERT_FILE"] = merged["cert"]
    return out


def pip_config_files(environ: Mapping[str, str]) -> list[Path]:
    """pip's configuration files, lowest priority first (as ``pip config list`` reads)."""
    home = Path(environ.get("HOME", "/root"))
    files = [Path("/etc/xdg/pip/pip.conf"), Path("/etc/pip.conf")]
    files += [home / ".pip" / "pip.conf", home / ".config" / "pip" / "pip.conf"]
    if environ.get("PIP_CONFIG_FILE"):
        files.append(Path(environ["PIP_CONFIG_FILE"]))
    return files


def _usable(url: str) -> bool:
    if url.startswith("file://"):
        return os.path.isdir(url[len("file://") :])
    if url.startswith("/"):
        return os.path.exists(url)
    return True
