"""Suite-wide rules for running the tests in parallel (``pytest -n N --dist loadgroup``).

Most tests own everything they touch (a temporary folder, their own daemons). Two kinds
share state across the whole machine and run one after another, on one worker:

- ``users``: tests that create real users and groups (``useradd`` takes a lock on
  ``/etc/passwd`` and fails when another holds it) and open folders on the way to the
  interpreter for them, restoring the modes afterwards;
- ``fsrig``: tests on the sshfs mounts of the FUSE rig, whose single ssh server and
  mounts all of them share.

A module that creates users is recognised by what it imports (``tests.realusers`` or
``tests.hostile.fleet``) or by calling ``useradd`` itself; nothing needs to be listed.

No test reads the host's settings file (``/etc/prsd/prsd.env``, where prsd is deployed):
:func:`no_host_settings` points ``PRSD_ENV_FILE`` at an empty file for the whole session,
in this process and every process it starts. A test that wants settings writes its own
file and points ``PRSD_ENV_FILE`` at it.
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import ModuleType

HERE = Path(__file__).parent
USER_MARKS = ("tests.realusers", "tests.hostile.fleet", "tests.hostile.identity_site", '"useradd"')


@pytest.fixture(scope="session", autouse=True)
def no_host_settings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An empty settings file for the session instead of the host's ``/etc/prsd/prsd.env``."""
    folder = tmp_path_factory.mktemp("settings")
    empty = folder / "prsd.env"
    empty.write_text("", encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(os.environ, "PRSD_ENV_FILE", str(empty))
        yield empty


def _group(module: ModuleType) -> str | None:
    path = Path(module.__file__ or "")
    if HERE / "fsrig" in path.parents:
        return "fsrig"
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        return None
    return "users" if any(mark in source for mark in USER_MARKS) else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    groups: dict[str, str | None] = {}
    for item in items:
        module = getattr(item, "module", None)
        if module is None:
            continue
        if module.__name__ not in groups:
            groups[module.__name__] = _group(module)
        group = groups[module.__name__]
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
