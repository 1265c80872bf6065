"""The code snapshot's digest over real files: stable, and safe over a snapshot its owner
may fill with links and FIFOs (the leader computes it as root)."""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

from prsd.spool.codedigest import code_digest

if TYPE_CHECKING:
    from pathlib import Path


def _snapshot(root: Path) -> Path:
    code = root / "code"
    (code / "pkg").mkdir(parents=True)
    (code / "score.py").write_text("def run(b):\n    return b\n", encoding="utf-8")
    (code / "pkg" / "util.py").write_text("X = 1\n", encoding="utf-8")
    return code


def test_the_same_snapshot_gives_the_same_digest_and_a_change_another(tmp_path: Path) -> None:
    a, b = _snapshot(tmp_path / "a"), _snapshot(tmp_path / "b")
    assert code_digest(a) == code_digest(b)
    (b / "pkg" / "util.py").write_text("X = 2\n", encoding="utf-8")
    assert code_digest(a) != code_digest(b)


def test_a_link_is_not_read_through_and_a_fifo_does_not_block(tmp_path: Path) -> None:
    """A link to a secret counts as ``?`` whatever the secret holds, and a FIFO (which
    an ``open`` for reading would wait on forever) is passed over at once."""
    secret = tmp_path / "secret.txt"
    secret.write_text("one\n", encoding="utf-8")
    code = _snapshot(tmp_path / "job")
    (code / "leak.py").symlink_to(secret)
    os.mkfifo(code / "pipe.py")
    got: list[str] = []
    walker = threading.Thread(target=lambda: got.append(code_digest(code)), daemon=True)
    walker.start()
    walker.join(10)
    assert got, "code_digest blocked on the FIFO"
    secret.write_text("two\n", encoding="utf-8")
    assert code_digest(code) == got[0], "the link's target was read"
