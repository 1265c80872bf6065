"""A build run with the job owner's ids: the folder handed over, then taken back.

Invariant: a root agent never runs a package's own build code as root for another
user's job. :func:`hand_over` gives the temporary build folder (and a uv cache of
that owner's own, ``<cache>/.uv-cache-owners/<uid>``, mode 700) to the owner, so the
install command can run with the owner's uid, gid and groups; :func:`take_back`
then makes every file root's again (``lchown``: a link is never followed), with the
set-id bits and the group and others' write bits cleared, before the folder is
published. uv copies files for such a build (``UV_LINK_MODE=copy``), so a regular
file with a second hard link can only be one the build code linked in (another
file of the machine, which a chown or chmod would change): :func:`take_back` then
refuses the folder and changes nothing of that file. An environment built as an owner is keyed by that owner
(:mod:`prsd.envs.node`), so no other user's job runs code one user's build could
have changed.

Errors: :class:`HardLinked` (a hard link in the folder); OSError from chown/chmod
(the caller fails the build, never the agent).
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.owner import RunAs


class HardLinked(Exception):
    """The build left a hard link to a file elsewhere; the folder is not published."""


def owner_cache(cache: Path, run_as: RunAs) -> Path:
    """The owner's own uv cache (shared only by that owner's builds)."""
    parent = cache / ".uv-cache-owners"
    parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    mine = parent / str(run_as.uid)
    mine.mkdir(mode=0o700, exist_ok=True)
    os.lchown(mine, run_as.uid, run_as.gid)
    os.chmod(mine, 0o700)
    return mine


def hand_over(prefix: Path, run_as: RunAs) -> None:
    """Every file under ``prefix`` (and it) owned by the job's owner."""
    for path in _walk(prefix):
        os.lchown(path, run_as.uid, run_as.gid)


def take_back(prefix: Path) -> None:
    """Every file under ``prefix`` root's, not writable by others, no set-id bits.

    Raises:
        HardLinked: a regular file has more than one link (checked before any change).
    """
    paths = _walk(prefix)
    for path in paths:
        info = os.lstat(path)
        if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
            raise HardLinked(f"the build left a hard link, {path}: the environment is not used")
    for path in paths:
        os.lchown(path, 0, 0)
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            continue
        mode = stat.S_IMODE(info.st_mode) & ~(stat.S_ISUID | stat.S_ISGID | 0o022)
        os.chmod(path, mode)


def _walk(prefix: Path) -> list[str]:
    paths = [str(prefix)]
    for top, dirs, files in os.walk(prefix, followlinks=False):
        paths += [os.path.join(top, name) for name in (*dirs, *files)]
    return paths
