"""systemd/prsd.env.example and docs/deploy.md's table of settings name the same settings."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def example_settings() -> set[str]:
    text = (ROOT / "systemd" / "prsd.env.example").read_text(encoding="utf-8")
    return set(re.findall(r"^(PRSD_[A-Z0-9_]+)=", text, flags=re.MULTILINE))


def deploy_table_settings() -> set[str]:
    text = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| `PRSD_")]
    return {name for row in rows for name in re.findall(r"`(PRSD_[A-Z0-9_]+)`", row.split("|")[1])}


def test_every_setting_of_the_example_is_in_the_deploy_table_and_back() -> None:
    example, table = example_settings(), deploy_table_settings()
    assert len(example) > 20
    assert example - table == set(), "in prsd.env.example, not in docs/deploy.md"
    assert table - example == set(), "in docs/deploy.md, not in prsd.env.example"


def test_every_setting_the_deploy_guide_mentions_is_in_the_example() -> None:
    text = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    mentioned = set(re.findall(r"\b(PRSD_[A-Z0-9_]*[A-Z0-9])\b", text))
    # PRSD_ENV_FILE names the settings file itself: it is set in an environment, never in it
    assert mentioned - example_settings() - {"PRSD_ENV_FILE"} == set()
