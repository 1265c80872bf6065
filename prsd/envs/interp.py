"""Which interpreter on this node an environment is built on.

Invariant: :func:`choose` is pure: given the pin and the interpreters found, it returns
one that satisfies the pin; else, for a pin of a patch level (``python=3.7.6``), the
newest interpreter of the same major.minor (3.7.16), with a note naming both versions
(patch levels of one minor keep its language and ABI); else (with ``python_mismatch:
warn``) the nearest newer one with a note saying so; else it raises :class:`EnvError`
naming the pin and what was found. ``python_mismatch`` governs other minors only.
:func:`find_interpreters` looks on the node: the agent's list
(``PRSD_ENV_PYTHONS``: paths, glob patterns such as
``/root/.pyenv/versions/*/bin/python``, or folders whose ``python*`` files are
offered), ``python3.N`` and ``python3`` on ``PATH``, and the agent's own Python; each
is asked for its version (a file that does not answer is left out), at most once
every ``REASK_S`` seconds per agent. uv's managed Pythons are not fetched: a node
that must serve old pins lists the interpreters it has.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass

from prsd.envs.spec import EnvError, Pin
from prsd.spool.listing import names

MISMATCH_MODES = ("error", "warn")
# An agent asks its interpreters once in a while, not for every job (a pyenv shim
# takes a good part of a second to answer).
REASK_S = 300.0
_memo: dict[tuple[str, str], tuple[float, list[Interpreter]]] = {}


@dataclass(frozen=True)
class Interpreter:
    path: str
    version: tuple[int, ...]

    @property
    def shown(self) -> str:
        return f"{self.path} ({'.'.join(map(str, self.version))})"


def choose(
    pin: Pin | None, found: list[Interpreter], mismatch: str = "error"
) -> tuple[Interpreter, str]:
    """The interpreter to build on and a note for the build log ("" when exact).

    No pin: the first found (the agent's list first, then PATH order). A pin of a patch
    level none meets: the newest of its major.minor (:func:`same_minor`), whatever
    ``mismatch`` says.

    Raises:
        EnvError: nothing found, or nothing satisfies the pin and ``mismatch`` is not
            ``warn`` (or nothing newer exists either).
    """
    if not found:
        raise EnvError("no Python interpreter found on this node")
    if pin is None:
        return found[0], ""
    matching = [i for i in found if pin.matches(i.version)]
    if matching:
        return max(matching, key=lambda i: i.version), ""
    near = same_minor(pin, found)
    if near is not None:
        return near, patch_note(pin, near)
    seen = ", ".join(i.shown for i in found)
    newer = sorted((i for i in found if i.version > pin.version), key=lambda i: i.version)
    if mismatch == "warn" and newer:
        pick = newer[0]
        return pick, f"no interpreter for {pin}; using the nearest newer one, {pick.shown}"
    raise EnvError(
        f"no interpreter for {pin} on this node (found: {seen}); install one, list it in "
        "PRSD_ENV_PYTHONS, or set python_mismatch: warn"
    )


def same_minor(pin: Pin, found: list[Interpreter]) -> Interpreter | None:
    """For an exact pin of a patch level (``python=3.7.6``): the newest interpreter of
    the same major.minor, else None (an ``>=`` pin or one of a minor is met or not)."""
    if pin.at_least or len(pin.version) < 3:
        return None
    minor = pin.version[:2]
    near = [i for i in found if i.version[:2] == minor]
    return max(near, key=lambda i: i.version) if near else None


def patch_note(pin: Pin, chosen: Interpreter) -> str:
    """What :func:`choose` says when it uses another patch level of the pinned minor."""
    pinned = ".".join(map(str, pin.version))
    used = ".".join(map(str, chosen.version))
    minor = ".".join(map(str, pin.version[:2]))
    return (
        f"{pin} pinned and this node has no {pinned}: using {used}, the same {minor} at "
        f"another patch level ({chosen.path})"
    )


def candidates(path_env: str | None = None, configured: str | None = None) -> list[str]:
    """Interpreter paths worth asking, in order, without duplicates (by real path)."""
    listed = [
        p for entry in (configured or "").split(os.pathsep) if entry for p in listed_paths(entry)
    ]
    names = [f"python3.{minor}" for minor in range(30, 7, -1)] + ["python3"]
    on_path = [w for n in names if (w := shutil.which(n, path=path_env))]
    out: list[str] = []
    seen: set[str] = set()
    for path in [*listed, *on_path, sys.executable]:
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            out.append(path)
    return out


_PYTHON_NAME = re.compile(r"^python(\d+(\.\d+)?)?$")


def listed_paths(entry: str) -> list[str]:
    """One ``PRSD_ENV_PYTHONS`` entry as paths: a glob's matches (sorted), a folder's
    ``python``, ``python3``, ``python3.N`` files, or the path itself."""
    if glob.has_magic(entry):
        return sorted(glob.glob(entry))
    if os.path.isdir(entry):
        return sorted(
            os.path.join(entry, name) for name in names(entry) if _PYTHON_NAME.match(name)
        )
    return [entry]


def find_interpreters(configured: str | None = None) -> list[Interpreter]:
    """Every candidate that runs and says its version (asked again after ``REASK_S``)."""
    memo_key = (configured or "", os.environ.get("PATH", ""))
    known = _memo.get(memo_key)
    if known is not None and time.monotonic() - known[0] < REASK_S:
        return list(known[1])
    found = _ask_all(configured)
    _memo[memo_key] = (time.monotonic(), found)
    return list(found)


def _ask_all(configured: str | None) -> list[Interpreter]:
    found: dict[str, Interpreter] = {}
    for path in candidates(os.environ.get("PATH"), configured):
        asked = ask(path)
        if asked is not None and asked.path not in found:
            found[asked.path] = asked
    return list(found.values())


def ask(path: str) -> Interpreter | None:
    """The interpreter behind ``path`` (a shim or link resolved by asking it)."""
    code = "import sys; print(sys.base_prefix); print('.'.join(map(str, sys.version_info[:3])))"
    try:
        out = subprocess.run(
            [path, "-c", code],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
        prefix, version = out.strip().splitlines()
        name = "python" + ".".join(version.split(".")[:2])
        real = os.path.join(prefix, "bin", name)
        exe = real if os.access(real, os.X_OK) else os.path.realpath(path)
        return Interpreter(exe, tuple(int(p) for p in version.split(".")))
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
