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

import fcntl
import hashlib
import json
import os
import pwd
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
    and any such folder get those rights for the test, and their modes back after.

    Tests run in several processes at once (pytest-xdist): the modes are opened by the
    first holder and given back by the last, their pids kept in a record beside a lock file in
    the system temp folder, so one test's end never closes the checkout under another."""
    from prsd.worker import boot

    installation = Path(boot.__file__).parents[2]
    record = Path(tempfile.gettempdir()) / (
        "prsd-reachable-" + hashlib.sha256(str(installation).encode()).hexdigest()[:16]
    )
    with _locked(record):
        state = _read_holders(record)
        if not state["holders"] and not state["changed"]:  # else: still open from before
            for folder in reversed(Path(boot.__file__).parents):
                mode = folder.stat().st_mode
                need = stat.S_IXOTH | (stat.S_IROTH if folder.is_relative_to(installation) else 0)
                if mode & need != need:
                    state["changed"].append([str(folder), stat.S_IMODE(mode)])
                    folder.chmod(stat.S_IMODE(mode) | need)
        state["holders"].append(os.getpid())
        record.write_text(json.dumps(state), encoding="utf-8")
    try:
        yield
    finally:
        with _locked(record):
            state = _read_holders(record)
            if os.getpid() in state["holders"]:
                state["holders"].remove(os.getpid())
            if not state["holders"]:
                for folder, mode in reversed(state["changed"]):
                    Path(folder).chmod(mode)
                state["changed"] = []
            record.write_text(json.dumps(state), encoding="utf-8")


@contextmanager
def _locked(record: Path) -> Iterator[None]:
    with open(f"{record}.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _read_holders(record: Path) -> dict[str, Any]:
    """The record, without holders that died holding (a killed test run)."""
    try:
        state = json.loads(record.read_text(encoding="utf-8"))
        holders = [pid for pid in state["holders"] if _alive(int(pid))]
        return {"holders": holders, "changed": list(state["changed"])}
    except (OSError, ValueError, KeyError, TypeError):
        return {"holders": [], "changed": []}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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


def _others_may_run(path: str) -> bool:
    """Every folder above ``path`` lets others enter, and others may execute it."""
    real = Path(os.path.realpath(path))
    folders_ok = all(p.stat().st_mode & stat.S_IXOTH for p in real.parents)
    return folders_ok and bool(real.stat().st_mode & stat.S_IXOTH)


def daemon_python() -> str:
    """An interpreter of the suite's Python version that every job owner may run.

    Root daemons start the owner-side process (prsd/asowner) with their own
    interpreter as the job's owner (docs/deploy.md: the daemons' interpreter must be
    usable by every job owner); the suite's own may live under a 0700 /root. Daemons
    started with it need :func:`daemon_pythonpath` in their environment.
    """
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (sys.executable, "/usr/bin/python3", f"/usr/bin/python{version}"):
        if not os.path.exists(candidate) or not _others_may_run(candidate):
            continue
        probe = subprocess.run(
            [candidate, "-c", "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.stdout.strip() == version:
            return candidate
    raise AssertionError(f"no Python {version} is usable by every user")


def daemon_pythonpath() -> str:
    """prsd's checkout and the suite's packages, for :func:`daemon_python`."""
    import sysconfig

    from prsd.worker import boot

    return f"{Path(boot.__file__).parents[2]}:{sysconfig.get_paths()['purelib']}"
