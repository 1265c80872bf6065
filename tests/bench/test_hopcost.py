"""``python -m bench.hopcost``: a thread hop's CPU and the owner's result file in the
claim's hop, at a tiny size, for a real unprivileged user (CI runs as root). No timing
is asserted beyond "measured"."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.realusers import real_users

REPO = Path(__file__).resolve().parents[2]


def test_each_shape_is_measured_for_a_real_user() -> None:
    with real_users(1) as (user,):
        proc = subprocess.run(
            [sys.executable, "-m", "bench.hopcost", "--user", user.name]
            + ["--tasks", "50", "--repeats", "1"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    medians = re.findall(r"^median (.+): CPU (\d+) us/task$", proc.stdout, re.MULTILINE)
    assert [name for name, _ in medians] == [
        "claim, then the owner's file (two hops)",
        "both in the claim's hop (one hop)",
        "an empty hop",
    ], proc.stdout
    assert all(int(cpu) > 0 for _, cpu in medians), proc.stdout
