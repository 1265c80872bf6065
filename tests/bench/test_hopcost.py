"""``python -m bench.hopcost``: a thread hop's CPU and the owner's result file in the
claim's hop, at a tiny size, for a real unprivileged user (CI runs as root). No timing
is asserted beyond "measured"."""

from __future__ import annotations

import re

from tests.bench.benchkit import run_bench
from tests.realusers import real_users


def test_each_shape_is_measured_for_a_real_user() -> None:
    with real_users(1) as (user,):
        stdout = run_bench("hopcost", ["--user", user.name] + ["--tasks", "50", "--repeats", "1"])
    medians = re.findall(r"^median (.+): CPU (\d+) us/task$", stdout, re.MULTILINE)
    assert [name for name, _ in medians] == [
        "claim, then the owner's file (two hops)",
        "both in the claim's hop (one hop)",
        "an empty hop",
    ], stdout
    assert all(int(cpu) > 0 for _, cpu in medians), stdout
