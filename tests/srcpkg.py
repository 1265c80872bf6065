"""Tiny source-only packages (sdists with no wheel), made on the spot for build tests.

Each sdist carries its own PEP 517 build backend (``backend-path``, no build
requirements), so a build needs no package index: the backend writes the wheel with
``zipfile``. The built module records the interpreter's version and the uid the build
ran as (``BUILT_BY_UID``); ``fail`` makes the backend raise that message instead, and
``sleep_s`` makes the build last that long (long enough to be seen building).
"""

from __future__ import annotations

import io
import tarfile
import textwrap
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

BACKEND = """
import base64, hashlib, os, sys, time, zipfile

NAME, VERSION, FAIL, SLEEP_S = {name!r}, {version!r}, {fail!r}, {sleep_s!r}
MOD = NAME.replace("-", "_")


def get_requires_for_build_wheel(config_settings=None):
    return []


def _record(entries):
    lines = []
    for path, data in entries:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        lines.append("%s,sha256=%s,%d" % (path, digest, len(data)))
    return "\\n".join(lines)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    time.sleep(SLEEP_S)
    if FAIL:
        raise RuntimeError(FAIL)
    info = "%s-%s.dist-info" % (MOD, VERSION)
    code = "BUILT_BY_UID = %d\\nBUILT_ON = %r\\n" % (os.getuid(), sys.version.split()[0])
    entries = [
        (MOD + "/__init__.py", code.encode()),
        (info + "/METADATA", ("Metadata-Version: 2.1\\nName: %s\\nVersion: %s\\n" % (NAME, VERSION)).encode()),
        (info + "/WHEEL", b"Wheel-Version: 1.0\\nGenerator: prsd-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"),
    ]
    record = _record(entries) + "\\n%s/RECORD,,\\n" % info
    wheel = "%s-%s-py3-none-any.whl" % (MOD, VERSION)
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w") as zf:
        for path, data in entries:
            zf.writestr(path, data)
        zf.writestr(info + "/RECORD", record)
    return wheel
"""

PYPROJECT = """
[build-system]
requires = []
build-backend = "backend"
backend-path = ["."]

[project]
name = "{name}"
version = "{version}"
"""


def make_sdist(
    folder: Path, name: str, version: str = "0.1", *, fail: str = "", sleep_s: float = 0.0
) -> Path:
    """``folder/<name>-<version>.tar.gz``, a source distribution with no wheel beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    mod = name.replace("-", "_")
    top = f"{mod}-{version}"
    files = {
        "pyproject.toml": PYPROJECT.format(name=name, version=version),
        "backend.py": BACKEND.format(name=name, version=version, fail=fail, sleep_s=sleep_s),
        "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
    }
    path = folder / f"{top}.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for rel, text in files.items():
            data = textwrap.dedent(text).lstrip().encode()
            info = tarfile.TarInfo(f"{top}/{rel}")
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return path
