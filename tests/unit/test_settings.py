"""The settings file read as systemd's ``EnvironmentFile=`` reads it, and where it is found."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from prsd.settings import ENV_FILE_ENV, env_file, file_settings, parse_env_text, setting


@pytest.mark.parametrize(
    ("text", "values"),
    [
        (
            "a=a\nb=b\\\nc\nd=d\\\ne\\\nf\ng=g\\ \nh=h\ni=i\\",
            {"a": "a", "b": "bc", "d": "def", "g": "g ", "h": "h", "i": "i"},
        ),
        ("a=a\\\n", {"a": "a"}),
        ("a=\nb=", {"a": "", "b": ""}),
        (
            '# Generated\n\nH="coretemp f71882fg"\n\n; old\nM0=coretemp\nM1=f',
            {"H": "coretemp f71882fg", "M0": "coretemp", "M1": "f"},
        ),
        ("  A  =  spaced value \t\n", {"A": "spaced value"}),
        ("A=x # not a comment\n", {"A": "x # not a comment"}),
        ("A='it''s'\nB=\"x\" y\n", {"A": "its", "B": "xy"}),
        ('A=a"b c"\nB=a\'b\n', {"A": 'a"b c"', "B": "a'b"}),
        ("A='one\ntwo'\nB=\"x\\\ny\"\n", {"A": "one\ntwo", "B": "xy"}),
        ('A="q\\"d\\\\s\\$v\\`b\\n"\n', {"A": 'q"d\\s$v`b\\n'}),
        ("A='no \\escape'\n", {"A": "no \\escape"}),
        ("A=1\nA=2\n", {"A": "2"}),
        ("export A=1\n1A=x\nA-B=y\n=z\njunk\nB=ok\n", {"B": "ok"}),
        ("#C=1 \\\nD=2\n", {"D": "2"}),
        ('A="open\n', {"A": "open\n"}),
        ("A=x\r\nB=y\r\n", {"A": "x", "B": "y"}),
    ],
    ids=[
        "continuations",
        "trailing-continuation",
        "empty",
        "comments-and-quotes",
        "whitespace",
        "hash-in-value",
        "quotes-join",
        "inner-quotes",
        "multi-line",
        "double-quote-escapes",
        "single-quote-verbatim",
        "last-wins",
        "bad-names",
        "comment-backslash",
        "unclosed-quote",
        "crlf",
    ],
)
def test_parse_like_systemd(text: str, values: dict[str, str]) -> None:
    """Each case as systemd's env-file parser (v254 and later) reads it."""
    assert parse_env_text(text) == values


def test_the_file_is_named_by_prsd_env_file(tmp_path: Path) -> None:
    """``PRSD_ENV_FILE`` names the file; without it, /etc/prsd/prsd.env."""
    assert env_file({}) == Path("/etc/prsd/prsd.env")
    assert env_file({ENV_FILE_ENV: str(tmp_path / "x.env")}) == tmp_path / "x.env"


def test_environment_first_then_file(tmp_path: Path) -> None:
    """A name set in the environment (even empty) wins; else the file's line, with its source."""
    path = tmp_path / "prsd.env"
    path.write_text("PRSD_SPOOL='/srv/spool'\nPRSD_ALLOWED_ROOTS=\"/data:/mnt/x\"\n")
    env = {ENV_FILE_ENV: str(path)}
    found = setting("PRSD_SPOOL", env)
    assert found is not None and found.value == "/srv/spool"
    assert found.source == f"PRSD_SPOOL in {path}"
    assert setting("PRSD_SPOOL", {**env, "PRSD_SPOOL": " /here "}) == setting(
        "PRSD_SPOOL", {"PRSD_SPOOL": "/here"}
    )
    assert setting("PRSD_ALLOWED_ROOTS", {**env, "PRSD_ALLOWED_ROOTS": ""}) is None
    assert setting("PRSD_NODE_ID", env) is None


@pytest.mark.parametrize("content", [None, b"\xff\xfeA=1\n", "folder"])
def test_an_unreadable_file_holds_nothing(tmp_path: Path, content: bytes | str | None) -> None:
    """A missing file, one that is not UTF-8, or a folder: no settings, no error."""
    path = tmp_path / "prsd.env"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content == "folder":
        path.mkdir()
    assert file_settings({ENV_FILE_ENV: str(path)}) == {}
    assert setting("A", {ENV_FILE_ENV: str(path)}) is None


def test_the_suite_never_reads_the_hosts_file(no_host_settings: Path) -> None:
    """This process and the processes it starts read the session's empty file."""
    assert env_file() == no_host_settings and no_host_settings.read_text() == ""
    shown = subprocess.run(
        [sys.executable, "-c", "from prsd.settings import env_file; print(env_file())"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert shown.stdout.strip() == str(no_host_settings)
