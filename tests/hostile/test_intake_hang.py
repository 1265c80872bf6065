"""One job whose spec cannot load holds up no other job's intake (issue 28).

Real root daemons and two real users. A hand-drops a job whose input lies under a hung
mount (tests/hostile/hungfs.py: every look below its top folder sleeps in the kernel,
as under a hard-mounted NFS share whose server went away). The spec loader, run as A,
sleeps there. B submits a job after A's: it is taken in and completes with its exact
rows while A's spec is still loading, and A's job then ends Failed with the reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tests.helpers import wait_until
from tests.hostile.identity_site import YAML, exact_rows, running_site
from tests.realusers import chown_tree, real_users

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.hostile.identity_site import Site

REPO = Path(__file__).resolve().parents[2]
LIMIT_S = 30  # PRSD_SPEC_LOAD_TIMEOUT_S: B's whole job fits well inside it


@contextlib.contextmanager
def hung_mount(mount: Path) -> Iterator[None]:
    """tests/hostile/hungfs.py served at ``mount`` (root's, ``allow_other``); released
    and unmounted afterwards, so every process sleeping under it wakes."""
    control = mount.parent / ".hang"
    control.write_text("hang\n")
    log = open(mount.parent / ".hungfs.log", "wb")  # noqa: SIM115 - closed below
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.hostile.hungfs", str(mount), str(control)],
        cwd=REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_until(lambda: os.path.ismount(mount), 30, f"the FUSE mount {mount}")
        yield
    finally:
        control.unlink(missing_ok=True)
        subprocess.run(["fusermount3", "-u", "-z", str(mount)], check=False)
        server.terminate()
        server.wait(timeout=30)
        log.close()


def _helpers_of(uid: int) -> list[int]:
    """Processes of ``uid`` running the spec loader."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}").st_uid != uid:
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"prsd.leader.intake.spechelper" in f.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


def _hung_job_of_a(site: Site) -> tuple[str, Path]:
    """A's folder (0700, A's) whose ``mnt`` is the hung mount's place, and the job.yaml
    naming an input under it."""
    source = site.job_folder(site.a, "hung")
    (source / "mnt").mkdir()
    chown_tree(source, site.a)
    yaml = textwrap.dedent(YAML.format(name="hung", python=site.python))
    return yaml.replace("input_data: ./data", "input_data: ./mnt/hung"), source


def test_a_job_whose_spec_load_hangs_holds_up_no_other_job() -> None:
    env = {"PRSD_SPEC_LOAD_TIMEOUT_S": str(LIMIT_S)}
    with real_users(2) as users, running_site(users, "prsd-hang-", env) as site:
        yaml, source = _hung_job_of_a(site)
        with hung_mount(source / "mnt"):
            origin = json.dumps({"job_dir": str(source)})
            site.drop_as(site.a, "hung", "hung-job", {"job.yaml": yaml, "origin.json": origin})
            a_job = site.new_job_of(site.a)
            wait_until(lambda: bool(_helpers_of(site.a.uid)), 30, "A's spec loader")
            time.sleep(2)
            assert _helpers_of(site.a.uid), "A's spec loader ended: nothing hung"
            hung_at = time.monotonic()

            b_job = site.submit_as(site.b, "bee")
            exact_rows(site, b_job, "bee")
            took = time.monotonic() - hung_at
            assert not site.final(a_job), f"A's job ended before B's: {site.final(a_job)}"
            assert _helpers_of(site.a.uid), "A's spec loader no longer hangs"
            assert took < LIMIT_S, took

            final = site.wait_ended(a_job)
            assert final["state"] == "Failed", final
            assert f"did not load within {LIMIT_S} s" in final["reason"], final
            assert "hung mount" in final["reason"], final
            result = site.jobs / a_job / "logs" / "job_result.txt"
            assert f"did not load within {LIMIT_S} s" in result.read_text(), result
