"""The inbox's grace period survives a leader restart; refused folders go after their
retention, removed with their owner's ids (issue 28, case 10).

Real root daemons and two real users. A leaves folders without ``job.yaml`` in the
inbox; the leader is stopped and started again; B's job completes exactly meanwhile.
"""

from __future__ import annotations

import json
import signal
import stat
import time
from typing import TYPE_CHECKING

from prsd.spool.inboxrecords import read_seen
from prsd.spool.readsafe import MissingFile
from tests.helpers import wait_until
from tests.hostile.identity_site import exact_rows, running_site
from tests.realusers import as_user, real_users

if TYPE_CHECKING:
    from pathlib import Path

    from tests.hostile.identity_site import Site

GRACE_S = 10.0


def _epoch(site: Site) -> int:
    try:
        return int(json.loads((site.spool / "leader" / "heartbeat.json").read_bytes())["epoch"])
    except (OSError, ValueError, KeyError):
        return 0


def _seen(site: Site) -> list[str]:
    return [name for name, _ in read_seen(site.spool / "leader" / "inbox_seen.json")]


def _seen_or_none(site: Site) -> list[str]:
    try:
        return _seen(site)
    except MissingFile:
        return []  # not written yet


def test_the_grace_period_is_counted_from_the_first_sighting_across_a_restart() -> None:
    """A's folder is first seen by the first leader, which stops; the next leader, started
    after the grace period has run out, moves the folder aside at once instead of
    counting the grace period again."""
    env = {"PRSD_INBOX_GRACE_S": str(GRACE_S)}
    with real_users(2) as users, running_site(users, "prsd-inbox-", env) as site:
        inbox = site.spool / "inbox"
        code, out = as_user(site.a, lambda: (inbox / "stuck").mkdir())
        assert code == 0, out
        # The first leader's sighting is on record (under load its start can take seconds).
        wait_until(lambda: "stuck" in _seen_or_none(site), 60, "the first sighting recorded")
        first = site.procs[0]
        before = _epoch(site)
        first.send_signal(signal.SIGTERM)
        first.wait(30)
        time.sleep(GRACE_S)  # the grace period runs out while no leader runs
        assert (inbox / "stuck").exists()
        site.start(["leader"], env)
        wait_until(lambda: _epoch(site) > before, 60, "the new leader to lead")
        leading = time.monotonic()
        wait_until(lambda: not (inbox / "stuck").exists(), 60, "the folder moved aside")
        assert time.monotonic() - leading < GRACE_S / 2, "the grace period was counted again"
        record = (site.spool / "leader" / "inbox_seen.json").stat()  # the daemons' own
        assert (record.st_uid, stat.S_IMODE(record.st_mode)) == (0, 0o600)
        # The record is rewritten after the move, in the same round: wait for it.
        wait_until(lambda: "stuck" not in _seen(site), 10, "the sighting dropped from the record")
        b_job = site.submit_as(site.b, "bee")
        exact_rows(site, b_job, "bee")


def _refused_folders(site: Site) -> list[Path]:
    folder = site.jobs / ".refused"
    return sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def test_refused_folders_are_removed_after_their_retention_as_their_owner() -> None:
    """Two refused folders of A's: the one holding only her files is removed with its
    record once the retention has passed; the one holding B's folder with B's file is
    kept (A may not remove B's file, and root does not), and the leader says so."""
    env = {"PRSD_INBOX_GRACE_S": "1", "PRSD_REFUSED_KEEP_S": "3"}
    with real_users(2) as users, running_site(users, "prsd-refused-", env) as site:
        inbox = site.spool / "inbox"

        def a_makes() -> None:
            for name in ("mine", "shared"):
                (inbox / name).mkdir()
                (inbox / name / "partial.txt").write_text("half a job\n")
            (inbox / "shared").chmod(0o777)

        def b_writes() -> None:
            (inbox / "shared" / "bobs").mkdir()
            (inbox / "shared" / "bobs" / "file.txt").write_text("bob's\n")

        assert as_user(site.a, a_makes)[0] == 0
        assert as_user(site.b, b_writes)[0] == 0
        b_job = site.submit_as(site.b, "bee")
        wait_until(lambda: len(_refused_folders(site)) == 2, 60, "both folders refused")
        records = {
            json.loads(p.read_bytes())["inbox_name"]: p.name.removesuffix(".json")
            for p in (site.jobs / ".refused").glob("*.json")
        }
        kept = site.jobs / ".refused" / records["shared"]
        gone = site.jobs / ".refused" / records["mine"]
        wait_until(lambda: not gone.exists(), 60, "the folder of A's alone removed")
        assert not gone.with_name(gone.name + ".json").exists()
        wait_until(lambda: "is kept" in site.log(), 30, "the leader to say one is kept")
        assert (kept / "bobs" / "file.txt").read_text() == "bob's\n"
        assert kept.with_name(kept.name + ".json").exists()
        assert not (kept / "partial.txt").exists()  # A's own file went
        exact_rows(site, b_job, "bee")
        assert all(p.poll() is None for p in site.procs), site.log()[-4000:]
