"""Turning a path written in a spec into an absolute path the job may use.

Guarantees:
- A relative path stays inside its base folder, both as written (no ``..`` escape) and
  after following symlinks (no link leading out).
- An absolute path lies under one of the allowed roots when any are configured (checked
  after following symlinks), or in the job's own folders; with none configured, a job
  the daemons run for another user (a confined job) may use only its own folders, and
  an unconfined one any path. A confined job never uses a system folder or another
  user's home that no allowed root names, nor the spool outside its own folder; no
  output ever lands on a name the daemons keep (rules: :mod:`prsd.jobspec.confine`).
  One exception for inputs: a confined job may read the ``outputs/`` folder of another
  job of the same owner (an earlier step of its pipeline), the owner as the leader
  recorded it (``owner.json``), never as a file the owner wrote claims.
- Returned paths are absolute and normalised, but not symlink-resolved: the spool may be
  mounted through a link whose name every node shares, and the path must read the same
  on every node.
- Cloud locations (``azureml:``, ``https://`` ...) are recognised, never fetched.
- No path holds a control character (a newline, an escape sequence, NUL): such a
  name would forge lines in logs and listings, and no real data set needs one.
- Allowed roots come from the caller, else from ``PRSD_ALLOWED_ROOTS`` (folders
  separated by ``:``) in the environment, else in the daemons' settings file
  (:mod:`prsd.settings`), so ``prsctl submit`` applies the daemons' rule.
"""

from __future__ import annotations

import dataclasses
import os
import pwd
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from prsd.jobspec import confine
from prsd.settings import ENV_FILE_ENV, setting
from prsd.spool.jobowner import OwnerRecordError, owner
from prsd.spool.layout import JobLayout, SpoolLayout

if TYPE_CHECKING:
    from prsd.jobspec.yamlsafe import Site

MAX_PATH_BYTES = 4096  # Linux PATH_MAX
MAX_NAME_BYTES = 255  # Linux NAME_MAX
ROOTS_ENV = "PRSD_ALLOWED_ROOTS"
SETTINGS_FILE_ENV = ENV_FILE_ENV  # names the settings file ROOTS_ENV is read from otherwise
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_REMOTE = re.compile(r"^(azureml|https?|wasbs?|abfss?|adl|s3|gs|git\+\w+|git):", re.IGNORECASE)


def is_remote(text: str) -> bool:
    """True for a cloud location or asset reference (``azureml://``, ``azureml:data:1``, ...)."""
    return bool(_REMOTE.match(text.strip()))


def local_text(text: str) -> str:
    """The path part of Azure's local forms: ``file:./x`` -> ``./x``, ``file:///x`` -> ``/x``."""
    text = text.strip()
    if text.lower().startswith("file://"):
        return text[len("file://") :]
    if text.lower().startswith("file:"):
        return text[len("file:") :]
    return text


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


@dataclass(frozen=True)
class Roots:
    """Where absolute paths of one job may lead (the rules of :mod:`prsd.jobspec.confine`).

    Attributes:
        folders: the configured allowed roots (none: see ``confined``).
        confined: the daemons act for someone else (see :func:`confine.is_confined`).
        job_folders: the job's own folders, always allowed (its spool folder, the
            folder it was submitted from).
        guarded: system folders and other users' homes (confined jobs only).
        spool: the spool's root, when known.
        job_root: the job's folder in the spool, when known.
        writers: for a confined job, the uids whose folders an output may be written
            into (the owner's and the daemons'); empty: not checked.
    """

    folders: tuple[Path, ...] = ()
    confined: bool = False
    job_folders: tuple[Path, ...] = ()
    guarded: tuple[Path, ...] = ()
    spool: Path | None = None
    job_root: Path | None = None
    writers: tuple[int, ...] = ()

    @classmethod
    def of(cls, folders: tuple[Path, ...] | list[Path]) -> Roots:
        """Roots from configured folders (made absolute, symlinks resolved).

        With no folders given, ``PRSD_ALLOWED_ROOTS`` (``:``-separated) supplies them,
        from the environment or the daemons' settings file (:mod:`prsd.settings`).
        """
        if not folders:
            folders = [Path(f) for f in configured_roots_text().split(":") if f.strip()]
        return cls(tuple(_real(Path(os.path.abspath(f))) for f in folders))

    def for_job(
        self, *, owner_uid: int, daemon_uid: int, spool: Path | None, job_root: Path | None
    ) -> Roots:
        """These roots applied to one job of ``owner_uid`` run by ``daemon_uid``."""
        confined = confine.is_confined(owner_uid, daemon_uid)
        folders = (_real(job_root),) if job_root is not None else ()
        return dataclasses.replace(
            self,
            confined=confined,
            job_folders=folders,
            guarded=guarded_folders(owner_uid) if confined else (),
            spool=_real(spool) if spool is not None else None,
            job_root=folders[0] if folders else None,
            writers=(owner_uid, daemon_uid) if confined else (),
        )

    def with_job_folder(self, folder: Path) -> Roots:
        """These roots with one more folder of the job's own (the submitted folder)."""
        return dataclasses.replace(self, job_folders=(*self.job_folders, _real(folder)))

    def problem(self, path: Path, *, output: bool = False) -> str | None:
        """Why ``path`` (symlinks followed) may not be used by the job, or None."""
        real = PurePosixPath(_real(path))
        if not output and self.confined and self._owners_output(real):
            return None
        spool, job_root = self.spool, self.job_root
        if spool is not None and job_root is not None and (output or self.confined):
            where = PurePosixPath(spool), PurePosixPath(job_root)
            found = confine.spool_problem(real, *where, output=output)
            if found:
                return found
        paths = [PurePosixPath(f) for f in self.folders]
        # Outputs go to the job's spool folder only: the merge writes there through a
        # folder the daemons own (the submitted folder is the owner's, read-only to us).
        own = (self.job_root,) if output and self.job_root is not None else self.job_folders
        mine = tuple(PurePosixPath(f) for f in own)
        # The job's own folders were vetted whole (a spool under /home/prsd is fine).
        if self.confined and not any(confine.under(real, f) for f in mine):
            guarded = [PurePosixPath(g) for g in self.guarded]
            found = confine.guard_problem(real, guarded, paths)
            if found:
                return found
        found = confine.roots_problem(real, tuple(paths), mine, confined=self.confined)
        if found is None and output and self.writers:
            found = _foreign_folder(Path(real).parent, self.writers)
        return found

    def _owners_output(self, real: PurePosixPath) -> bool:
        """``real`` is inside ``outputs/`` of another job in the spool with this job's owner."""
        if self.spool is None or not self.writers:
            return False
        jobs = PurePosixPath(SpoolLayout(Path(self.spool)).jobs)
        if not confine.under(real, jobs) or real == jobs:
            return False
        parts = real.relative_to(jobs).parts
        if len(parts) < 2 or parts[1] != "outputs":
            return False
        try:
            recorded = owner(JobLayout(Path(jobs / parts[0]), parts[0]))
        except (OwnerRecordError, OSError):
            return False
        return recorded.uid == self.writers[0]

    def allows(self, path: Path) -> bool:
        """True when ``path`` may be used (see :meth:`problem`)."""
        return self.problem(path) is None

    def listed(self) -> str:
        """The roots, for messages."""
        return ", ".join(str(f) for f in self.folders)

    def check(self, path: Path, site: Site, *, output: bool = False, written: str = "") -> None:
        """Refuse ``path`` (``written`` as the spec gave it) unless the job may use it.

        Raises:
            JobSpecError: naming the key, the path (and what it resolves to) and why.
        """
        found = self.problem(path, output=output)
        if found is not None:
            real = _real(path)
            shown = f"{path}" if real == path else f"{path} (resolves to {real})"
            if written and written != str(path):
                shown = f"{written!r} ({shown})"
            raise site.error(f"{shown} {found}")


def _foreign_folder(folder: Path, writers: tuple[int, ...]) -> str | None:
    """Why the nearest existing folder of an output is not the owner's or the daemons'.

    An early answer only: the merge checks the folder it opens again, by descriptor.
    """
    while not os.path.lexists(folder) and folder != folder.parent:
        folder = folder.parent
    try:
        uid = os.stat(folder).st_uid
    except OSError:
        return None
    if uid in writers:
        return None
    return (
        f"would be written into {folder}, which belongs to uid {uid}, neither the job's "
        "owner nor the daemons"
    )


def configured_roots_text() -> str:
    """``PRSD_ALLOWED_ROOTS`` from the environment, else from the settings file."""
    found = setting(ROOTS_ENV)
    return found.value if found is not None else ""


def guarded_folders(owner_uid: int) -> tuple[Path, ...]:
    """System folders and the homes of root and of every other login user."""
    homes: set[str] = set()
    for entry in pwd.getpwall():
        if entry.pw_uid == owner_uid or not (entry.pw_uid == 0 or entry.pw_uid >= 1000):
            continue
        if entry.pw_dir and entry.pw_dir != "/" and os.path.isabs(entry.pw_dir):
            homes.add(os.path.realpath(entry.pw_dir))
    system = [Path(p) for p in confine.SYSTEM_FOLDERS]
    return (*system, *sorted(Path(h) for h in homes))


def stays_inside(path: Path, folder: Path) -> bool:
    """True when ``path``, symlinks followed, lies in ``folder`` (symlinks followed)."""
    return _real(path).is_relative_to(_real(folder))


def inside(base: Path, text: str, site: Site, what: str) -> Path:
    """``base/text``, refusing anything that leaves ``base``.

    Args:
        base: an absolute, normalised folder.
        text: a relative path as written.
        site: where ``text`` was written.
        what: how messages call ``base`` ("job folder", "code folder").

    Raises:
        JobSpecError: ``text`` leaves ``base`` by ``..`` or through a symlink, or holds
            a control character.
    """
    refuse_control(text, site)
    if _too_long(text):
        raise site.error(f"the path is too long ({len(text)} characters)")
    lexical = Path(os.path.normpath(base / text))
    if not lexical.is_relative_to(base):
        raise site.error(f"{text!r} leaves the {what} ({base}); paths must stay inside it")
    real, real_base = _real(lexical), _real(base)
    if not real.is_relative_to(real_base):
        raise site.error(f"{text!r} leads through a symlink to {real}, outside the {what} ({base})")
    return lexical


def resolve(
    base: Path,
    text: str,
    roots: Roots,
    site: Site,
    what: str = "job folder",
    *,
    output: bool = False,
) -> Path:
    """An absolute path for ``text`` (relative to ``base``), after the containment rules.

    ``output`` marks a path the daemons will write: relative ones are checked too (never
    a name the daemons keep in the job's folder).

    Raises:
        JobSpecError: a cloud location, a relative path leaving ``base``, an absolute
            path outside the allowed roots, or a path the job may not use.
    """
    text = local_text(text)
    refuse_control(text, site)
    if is_remote(text):
        raise site.error(
            f"{text!r} is a cloud location; prsd reads local paths only "
            "(copy or mount the data and give its path)"
        )
    if not text:
        raise site.error("expected a path, got an empty string")
    if _too_long(text):
        raise site.error(f"the path is too long ({len(text)} characters)")
    path = Path(text)
    if path.is_absolute():
        normal = Path(os.path.normpath(path))
        roots.check(normal, site, output=output)
        return normal
    found = inside(base, text, site, what)
    if output:
        roots.check(found, site, output=True, written=text)
    return found


def refuse_control(text: str, site: Site) -> None:
    """Refuse a path (or name) holding a control character (newline, escape, NUL...).

    Raises:
        JobSpecError: naming the first such character.
    """
    m = _CONTROL.search(text)
    if m is not None:
        raise site.error(f"contains the control character {m.group()!r}; use printable text")


def _too_long(text: str) -> bool:
    raw = os.fsencode(text)
    return len(raw) >= MAX_PATH_BYTES or any(len(p) > MAX_NAME_BYTES for p in raw.split(b"/"))


def must_exist(path: Path, site: Site, *, kind: str = "file or folder") -> Path:
    """``path`` itself, once it is known to exist.

    Raises:
        JobSpecError: nothing is there, or it cannot be looked at (permissions).
    """
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise site.error(f"{kind} {path} does not exist") from None
    except OSError as exc:
        raise site.error(f"{kind} {path} cannot be read: {exc.strerror}") from None
    return path
