"""Real unprivileged users for tests that run root daemons: created, acted as, removed.

``real_users(n)`` creates users with ``useradd`` (each with a private group, and
``prsdx<hex>`` as a shared supplementary group) and deletes them afterwards; the
tests run as root, as CI does. ``as_user(user, fn)`` runs a Python callable as that
user in a forked child (setgroups, setgid, setuid: the real kernel checks apply), so
an attack is written in Python and nothing needs an interpreter the user can exec.
Modules the callable needs must be imported before the fork: the test's Python may
live where the user cannot read (a pyenv under /root).
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


@dataclass(frozen=True)
class User:
    """A user made for the test."""

    name: str
    uid: int
    gid: int
    extra_group: str

    @property
    def groups(self) -> list[int]:
        return os.getgrouplist(self.name, self.gid)


@contextmanager
def real_users(count: int) -> Iterator[list[User]]:
    """``count`` fresh users sharing one supplementary group, deleted afterwards."""
    assert os.geteuid() == 0, "these tests need root (CI runs as root)"
    suffix = secrets.token_hex(3)
    extra = f"prsdx{suffix}"
    subprocess.run(["groupadd", extra], check=True)
    made: list[User] = []
    try:
        for i in range(count):
            name = f"prsd{chr(ord('a') + i)}{suffix}"
            subprocess.run(
                ["useradd", "-M", "-U", "-s", "/usr/sbin/nologin", "-G", extra, name], check=True
            )
            entry = pwd.getpwnam(name)
            made.append(User(name, entry.pw_uid, entry.pw_gid, extra))
        yield made
    finally:
        for user in made:
            subprocess.run(["userdel", user.name], check=False)
        subprocess.run(["groupdel", extra], check=False)


def as_user(user: User, fn: Callable[[], object]) -> tuple[int, str]:
    """Run ``fn`` as ``user`` in a forked child; (0 and what it returned as text) or
    (1 and the exception, ``ExcType: message``)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.close(read_fd)
            os.setgroups(user.groups)
            os.setgid(user.gid)
            os.setuid(user.uid)
            out = str(fn())
            code = 0
        except BaseException as exc:  # noqa: BLE001 - reported to the parent, whatever it is
            out = "".join(traceback.format_exception_only(exc)).strip()
        try:
            sys.stdout.flush()
            os.write(write_fd, out.encode())
        finally:
            os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        out = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out


def python_for(user: User | pwd.struct_passwd) -> str:
    """An interpreter this user may run for the job's workers (stdlib only); the
    suite's own may live where the user cannot read (a pyenv under /root)."""
    name = user.name if isinstance(user, User) else user.pw_name
    for candidate in (os.path.realpath(sys.executable), "/usr/bin/python3"):
        probe = subprocess.run(
            ["runuser", "-u", name, "--", candidate, "-c", "pass"],
            stderr=subprocess.DEVNULL,
            check=False,
        )
        if probe.returncode == 0:
            return candidate
    raise AssertionError(f"no Python interpreter is usable by {name}")


@contextmanager
def reachable_checkout() -> Iterator[None]:
    """Workers run as a job's owner start from prsd's own ``worker/boot.py``: others
    must be able to enter every folder above the checkout and list the checkout's
    folders on the way (imports list them). A ``mktemp -d`` clone is a 0700 folder: it
    and any such folder get those rights for the test, and their modes back after; so do
    the folders above the suite's interpreter (the input planner runs it as the owner)."""
    from prsd.worker import boot

    installation = Path(boot.__file__).parents[2]
    changed: list[tuple[Path, int]] = []
    for folder in reversed(Path(boot.__file__).parents):
        mode = folder.stat().st_mode
        need = stat.S_IXOTH | (stat.S_IROTH if folder.is_relative_to(installation) else 0)
        if mode & need != need:
            changed.append((folder, mode))
            folder.chmod(stat.S_IMODE(mode) | need)
    # The daemons' own interpreter starts a job's input planner as its owner: the
    # folders above it (a pyenv under /root) must let the owner enter.
    for folder in interpreter_folders():
        mode = folder.stat().st_mode
        if mode & stat.S_IXOTH != stat.S_IXOTH:
            changed.append((folder, mode))
            folder.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)
    try:
        yield
    finally:
        for folder, mode in reversed(changed):
            folder.chmod(stat.S_IMODE(mode))


def interpreter_folders() -> list[Path]:
    """The folders above the suite's interpreter and its standard library, top first."""
    seen: list[Path] = []
    for place in (os.path.realpath(sys.executable), sysconfig.get_paths()["stdlib"]):
        for folder in reversed(Path(os.path.realpath(place)).parents):
            if folder not in seen:
                seen.append(folder)
    return seen


@contextmanager
def open_base(prefix: str) -> Iterator[Path]:
    """A 0755 folder under the system temp folder (pytest's own is 0700), removed after."""
    base = Path(tempfile.mkdtemp(prefix=prefix))
    base.chmod(0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def chown_tree(root: Path, user: User | pwd.struct_passwd) -> None:
    """Give ``root`` and everything under it to ``user`` (links themselves, never targets)."""
    uid, gid = (user.uid, user.gid) if isinstance(user, User) else (user.pw_uid, user.pw_gid)
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            os.chown(os.path.join(folder, name), uid, gid, follow_symlinks=False)
    os.chown(root, uid, gid)


@contextmanager
def plain_user(prefix: str) -> Iterator[pwd.struct_passwd]:
    """One fresh unprivileged user (no home, no login), deleted afterwards."""
    assert os.geteuid() == 0, "these tests need root (CI runs as root)"
    name = f"{prefix}{secrets.token_hex(3)}"
    subprocess.run(["useradd", "-M", "-s", "/usr/sbin/nologin", name], check=True)
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], check=False)
