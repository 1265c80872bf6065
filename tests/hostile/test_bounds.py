"""Bounds that hold against a hostile job owner: two real users against root daemons.

The daemons run with small bounds so the cases are quick: captured output capped at
16 MiB per file, 48 processes per worker (``pids.max`` and ``RLIMIT_NPROC``), and an
inbox grace period of 3 s. User A floods stdout, forks without end and fills the
inbox with 5,000 empty folders; user B's job completes exactly meanwhile.
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING

import pytest

from prsd.spool.opening import open_spool
from tests.helpers import wait_until
from tests.hostile.identity_site import Site, exact_rows, prsctl_as, running_site
from tests.realusers import (
    as_user,
    chown_tree,
    real_users,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

CAP = 16 * 1024 * 1024
PIDS = 48
FLOOD = """
import os, sys, time
def init():
    pass
def run(mini_batch):
    if not mini_batch[0].endswith("item0.txt"):
        return ["flood " + p.rsplit("/", 1)[-1] for p in mini_batch]
    sys.stdout.flush()
    chunk = b"x" * (4 << 20)
    start, written = time.monotonic(), 0
    # 3 s as fast as it goes, written while the tail is copied, and at least three caps'
    # worth (a loaded machine writes less in 3 s); 30 s at most
    while time.monotonic() < start + 30:
        if time.monotonic() > start + 3 and written > 3 * CAP_BYTES:
            break
        written += os.write(sys.stdout.fileno(), chunk)
    return ["flood " + p.rsplit("/", 1)[-1] for p in mini_batch]
""".replace("CAP_BYTES", str(CAP))
FORKS = """
import os, time
def init():
    pass
def run(mini_batch):
    made = 0
    while made < 120:  # a ceiling of the test's own, well above the bound
        try:
            pid = os.fork()
        except OSError as exc:
            raise RuntimeError(f"fork bounded after {made} children: {exc}")
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        made += 1
    return [f"unbounded {made}" for p in mini_batch]
"""


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    """A root leader and agent with small bounds; users A and B."""
    bounds = {
        "PRSD_MAX_CAPTURED_OUTPUT": str(CAP),
        "PRSD_WORKER_PIDS_MAX": str(PIDS),
        "PRSD_INBOX_GRACE_S": "3",
    }
    with real_users(2) as users, running_site(users, "prsd-bounds-", bounds) as s:
        yield s


def job_of_a(site: Site, tag: str, script: str, extra: str = "") -> str:
    folder = site.job_folder(site.a, tag)
    (folder / "code" / "score.py").write_text(script, encoding="utf-8")
    if extra:
        (folder / "job.yaml").write_text((folder / "job.yaml").read_text() + extra)
    chown_tree(folder, site.a)
    from prsd.submit import submit

    spool = open_spool(site.spool, create=False)
    code, job_id = as_user(site.a, lambda: submit(folder, spool)[0])
    assert code == 0, job_id
    site.known.add(job_id)
    return job_id


def test_every_captured_output_file_stays_under_the_cap(site: Site) -> None:
    """3 s of printing at full speed by A's worker (three caps at least): no stdout file,
    rotated or not, over the cap (the copy of the tail used to follow the writes made
    meanwhile, unbounded)."""
    a_job = job_of_a(site, "flood", FLOOD)
    b_job = site.submit_as(site.b, "bee", pause_s=0.5)
    exact_rows(site, a_job, "flood")
    exact_rows(site, b_job, "bee")
    files = [p for p in (site.jobs / a_job / "logs").rglob("*.stdout.txt*") if p.is_file()]
    assert any(p.name.endswith(".1") for p in files), files
    sizes = {str(p): p.stat().st_size for p in files}
    assert all(size <= CAP for size in sizes.values()), sizes


def test_a_fork_bomb_in_run_is_bounded_and_fails_the_job(site: Site) -> None:
    """A's run() forks until refused: it is refused at the bound, the job fails with the
    reason, the node serves B's job to its exact end."""
    a_job = job_of_a(site, "forker", FORKS, "retry_settings: {max_retries: 0}\n")
    b_job = site.submit_as(site.b, "bee2", pause_s=0.5)
    ended = site.wait_ended(a_job)
    assert ended["state"] == "Failed", ended
    _, text = prsctl_as(site.a, site, "status", a_job, "--json")
    assert "fork bounded after" in text, text
    made = [int(w) for w in text.split("fork bounded after ")[1].split()[:1]]
    assert made and made[0] < PIDS, text
    exact_rows(site, b_job, "bee2")
    assert all(p.poll() is None for p in site.procs), site.log()[-4000:]


def test_thousands_of_empty_inbox_folders_are_summarised_and_moved_aside(site: Site) -> None:
    """5,000 empty folders of A's: prsctl status stays fast and says so in one line, the
    leader moves them aside after its grace period, B's job completes exactly."""
    inbox = site.spool / "inbox"

    def flood() -> None:
        for i in range(5000):
            (inbox / f"junk{i:05d}").mkdir()

    code, out = as_user(site.a, flood)
    assert code == 0, out
    b_job = site.submit_as(site.b, "bee3")
    started = time.monotonic()
    code, text = prsctl_as(site.b, site, "status")
    took = time.monotonic() - started
    assert code == 0 and took < 10, took
    assert len(text.splitlines()) < 100, text[:2000]
    assert "queued folders in the inbox" in text or "refused" in text, text[-2000:]
    exact_rows(site, b_job, "bee3")
    wait_until(
        lambda: not any(n.startswith("junk") for n in os.listdir(inbox)), 120, "folders moved"
    )
    code, text = prsctl_as(site.b, site, "status", "--json")
    summary = json.loads(text)["inbox"]
    assert summary["refused"] >= 5000 and summary["folders"] == 0, summary
    assert "without job.yaml" in summary["refused_latest"][0]["reason"] or "job.yaml" in str(
        summary["refused_latest"][0]
    )
    assert site.log().count("refused inbox folders; moved aside") < 50
