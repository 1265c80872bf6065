"""The daemons' settings file, ``/etc/prsd/prsd.env``: the one reader, as systemd reads it.

The daemons get their settings from systemd (``EnvironmentFile=/etc/prsd/prsd.env``);
every client and every check that must agree with them (``prsctl``, ``prsd run``, the
allowed roots of a job spec) reads them here. ``PRSD_ENV_FILE`` names another file (an
unusual install, a test). See docs/deploy.md, "The settings file".

Guarantees:
- :func:`parse_env_text` returns what systemd puts in the daemons' environment from the
  same text: ``#`` and ``;`` start a comment line; a line without ``=`` is skipped;
  whitespace around the name and the value is dropped; ``'...'`` keeps everything
  verbatim, ``"..."`` unescapes ``\\"``, ``\\\\``, ``\\``` and ``\\$`` (any other
  backslash stays), both may span lines and may be followed by more text that joins the
  value; an unquoted value keeps inner whitespace and quotes, a backslash keeps the next
  character, and a backslash at the end of a line joins the next line. A name that is not
  letters, digits and ``_`` (not starting with a digit; so ``export NAME=...``) is
  skipped, as systemd skips it; the last of two lines with one name wins.
- :func:`setting` prefers the process environment: a name set there (even empty) is
  what the daemons would see, and the file is read only when it is not set.
- A missing or unreadable file, or one that is not UTF-8, holds no settings; a file
  larger than :data:`MAX_BYTES` is read up to that size.

Errors: none raised; a file that cannot be read is no file.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

ENV_FILE_ENV = "PRSD_ENV_FILE"
DEFAULT_ENV_FILE = Path("/etc/prsd/prsd.env")
MAX_BYTES = 1024 * 1024
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WHITESPACE = " \t\n\r"
_NEWLINE = "\n\r"
_COMMENT = "#;"
_DOUBLE_QUOTE_ESCAPES = '"\\`$'


@dataclass(frozen=True)
class Setting:
    """A value and where it came from, for messages."""

    value: str
    source: str


class _Parser:
    """systemd's env-file state machine, one character at a time."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.state = "pre_key"
        self.key: list[str] = []
        self.value: list[str] = []
        self.key_end: int | None = None  # where the key's trailing whitespace starts
        self.value_end: int | None = None  # where the value's trailing whitespace starts

    def feed(self, text: str) -> dict[str, str]:
        for c in text:
            getattr(self, f"_{self.state}")(c)
        if self.state not in ("pre_key", "key", "comment", "comment_escape"):
            self._push(strip=self.state == "value")
        return self.values

    def _push(self, *, strip: bool) -> None:
        key = "".join(self.key[: self.key_end])
        value = "".join(self.value[: self.value_end] if strip else self.value)
        if _NAME.fullmatch(key):
            self.values[key] = value
        self.key, self.value, self.key_end, self.value_end = [], [], None, None

    def _pre_key(self, c: str) -> None:
        if c in _COMMENT:
            self.state = "comment"
        elif c not in _WHITESPACE:
            self.state, self.key, self.key_end = "key", [c], None

    def _key(self, c: str) -> None:
        if c in _NEWLINE:
            self.state, self.key = "pre_key", []
        elif c == "=":
            self.state, self.value_end = "pre_value", None
        else:
            if c not in _WHITESPACE:
                self.key_end = None
            elif self.key_end is None:
                self.key_end = len(self.key)
            self.key.append(c)

    def _pre_value(self, c: str) -> None:
        if c in _NEWLINE:
            self.state = "pre_key"
            self._push(strip=False)
        elif c == "'":
            self.state = "single_quote"
        elif c == '"':
            self.state = "double_quote"
        elif c == "\\":
            self.state = "value_escape"
        elif c not in _WHITESPACE:
            self.state = "value"
            self.value.append(c)

    def _value(self, c: str) -> None:
        if c in _NEWLINE:
            self.state = "pre_key"
            self._push(strip=True)
        elif c == "\\":
            self.state, self.value_end = "value_escape", None
        else:
            if c not in _WHITESPACE:
                self.value_end = None
            elif self.value_end is None:
                self.value_end = len(self.value)
            self.value.append(c)

    def _value_escape(self, c: str) -> None:
        self.state = "value"
        if c not in _NEWLINE:
            self.value.append(c)

    def _single_quote(self, c: str) -> None:
        if c == "'":
            self.state = "pre_value"
        else:
            self.value.append(c)

    def _double_quote(self, c: str) -> None:
        if c == '"':
            self.state = "pre_value"
        elif c == "\\":
            self.state = "double_quote_escape"
        else:
            self.value.append(c)

    def _double_quote_escape(self, c: str) -> None:
        self.state = "double_quote"
        if c in _DOUBLE_QUOTE_ESCAPES:
            self.value.append(c)
        elif c != "\n":
            self.value.extend(("\\", c))

    def _comment(self, c: str) -> None:
        if c == "\\":
            self.state = "comment_escape"
        elif c in _NEWLINE:
            self.state = "pre_key"

    def _comment_escape(self, c: str) -> None:
        self.state = "pre_key" if c in _NEWLINE else "comment"


def parse_env_text(text: str) -> dict[str, str]:
    """The settings ``text`` gives, as systemd's ``EnvironmentFile=`` reads it."""
    return _Parser().feed(text)


def env_file(environ: Mapping[str, str] | None = None) -> Path:
    """The settings file: ``PRSD_ENV_FILE``, else ``/etc/prsd/prsd.env``."""
    env = os.environ if environ is None else environ
    return Path(env.get(ENV_FILE_ENV) or DEFAULT_ENV_FILE)


def file_settings(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every setting of the settings file (none when it cannot be read)."""
    try:
        with open(env_file(environ), "rb") as f:
            raw = f.read(MAX_BYTES)
        return parse_env_text(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError):
        return {}


def setting(name: str, environ: Mapping[str, str] | None = None) -> Setting | None:
    """``name`` from the environment when set there, else from the settings file.

    Returns None when the value is empty or unset; surrounding whitespace is dropped.
    """
    env = os.environ if environ is None else environ
    if name in env:
        value = env[name].strip()
        return Setting(value, name) if value else None
    value = file_settings(env).get(name, "").strip()
    return Setting(value, f"{name} in {env_file(env)}") if value else None
