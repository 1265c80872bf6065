"""Turning a path written in a spec into an absolute path the job may use.

Guarantees:
- A relative path stays inside its base folder, both as written (no ``..`` escape) and
  after following symlinks (no link leading out).
- An absolute path lies under one of the allowed roots when any are configured (checked
  after following symlinks); with none configured every absolute path is accepted.
- Returned paths are absolute and normalised, but not symlink-resolved: the spool may be
  mounted through a link whose name every node shares, and the path must read the same
  on every node.
- Cloud locations (``azureml:``, ``https://`` ...) are recognised, never fetched.
- No path holds a control character (a newline, an escape sequence, NUL): such a
  name would forge lines in logs and listings, and no real data set needs one.
- Allowed roots come from the caller, else from ``PRSD_ALLOWED_ROOTS`` (folders
  separated by ``:``), the daemons' configuration for a shared spool.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prsd.jobspec.yamlsafe import Site

MAX_PATH_BYTES = 4096  # Linux PATH_MAX
MAX_NAME_BYTES = 255  # Linux NAME_MAX
ROOTS_ENV = "PRSD_ALLOWED_ROOTS"
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
    """The folders absolute paths must lie under (none: any absolute path is accepted)."""

    folders: tuple[Path, ...] = ()

    @classmethod
    def of(cls, folders: tuple[Path, ...] | list[Path]) -> Roots:
        """Roots from configured folders (made absolute, symlinks resolved).

        With no folders given, ``PRSD_ALLOWED_ROOTS`` (``:``-separated) supplies them.
        """
        if not folders:
            folders = [Path(f) for f in os.environ.get(ROOTS_ENV, "").split(":") if f.strip()]
        return cls(tuple(_real(Path(os.path.abspath(f))) for f in folders))

    def allows(self, path: Path) -> bool:
        """True when no roots are configured or ``path`` lies under one (links followed)."""
        real = _real(path)
        return not self.folders or any(real.is_relative_to(root) for root in self.folders)

    def listed(self) -> str:
        """The roots, for messages."""
        return ", ".join(str(f) for f in self.folders)

    def check(self, path: Path, site: Site) -> None:
        """Refuse ``path`` unless it lies under an allowed root.

        Raises:
            JobSpecError: roots are configured and ``path`` is under none of them.
        """
        if not self.allows(path):
            real = _real(path)
            shown = f"{path}" if real == path else f"{path} (resolves to {real})"
            raise site.error(f"{shown} is outside the allowed roots ({self.listed()})")


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


def resolve(base: Path, text: str, roots: Roots, site: Site, what: str = "job folder") -> Path:
    """An absolute path for ``text`` (relative to ``base``), after the containment rules.

    Raises:
        JobSpecError: a cloud location, a relative path leaving ``base``, or an absolute
            path outside the allowed roots.
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
        roots.check(normal, site)
        return normal
    return inside(base, text, site, what)


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
