"""Names no daemon can decode never stop one: two real users against root daemons.

User A makes inbox folders and job files whose names are not UTF-8 (``x\\xff``,
``caf\\xe9.txt``); two root leaders and one root agent serve the spool. Each case
asserts that no daemon stopped (nor does one started again), that A's entry is
refused or run alone with a reason, and that B's job meanwhile ends Completed with
exactly its rows.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from prsd.read.jobs import job_ids
from prsd.spool.opening import open_spool
from tests.helpers import stop_daemons, wait_until
from tests.hostile.identity_site import Site, exact_rows, prsctl_as, running_site
from tests.realusers import (
    as_user,
    chown_tree,
    real_users,
)

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

ODD_WRITER = """\
    import os
    for name in (b"caf\\xe9.log", b"r\\xe9sultat\\xff.txt"):  # in its working folder
        with open(os.fsdecode(name), "w") as f:
            f.write("written by init\\n")
"""
BAD = os.fsdecode(b"x\xff")
"""An inbox name that is not UTF-8 (as Python lists it: a lone surrogate)."""


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    """Two root leaders and a root agent on a fresh spool; users A and B."""
    with real_users(2) as users, running_site(users, "prsd-names-", leaders=2) as s:
        yield s


def all_alive(site: Site) -> None:
    dead = [p.args for p in site.procs if p.poll() is not None]
    assert not dead, f"daemons stopped: {dead}\n{site.log()[-6000:]}"


def bad_inbox_folder(site: Site, name: str) -> Path:
    """A's folder under an undecodable name in the inbox, with a job.yaml in it."""
    folder = site.job_folder(site.a, "undecodable")
    final = site.spool / "inbox" / name
    code, out = as_user(site.a, lambda: folder.rename(final))
    assert code == 0, out
    return final


def test_an_undecodable_inbox_name_is_moved_aside_and_no_leader_stops(site: Site) -> None:
    """Both leaders live on; the folder is moved out of the inbox with the reason in the
    leaders' log and in ``prsctl status``; B's job completes exactly; restarted leaders
    live on too (with a second such folder waiting for them)."""
    b_job = site.submit_as(site.b, "bee", pause_s=1.0)
    bad = bad_inbox_folder(site, BAD)
    empty = site.spool / "inbox" / os.fsdecode(b"empty\xfe")
    code, out = as_user(site.a, lambda: empty.mkdir())
    assert code == 0, out
    wait_until(lambda: not os.path.lexists(bad), 60, "the undecodable folder moved aside")
    exact_rows(site, b_job, "bee")
    all_alive(site)
    assert "not UTF-8" in site.log()
    code, text = prsctl_as(site.b, site, "status")
    assert code == 0 and "x\\xff" in text and "not UTF-8" in text, text

    leaders = [p for p in site.procs if "leader" in list(p.args)]  # type: ignore[arg-type]
    stop_daemons(leaders)
    site.procs[:] = [p for p in site.procs if p not in leaders]
    again = bad_inbox_folder(site, os.fsdecode(b"y\xff"))
    site.start(["leader"])
    site.start(["leader"])
    b_again = site.submit_as(site.b, "bee2")
    wait_until(lambda: not os.path.lexists(again), 60, "the second folder moved aside")
    exact_rows(site, b_again, "bee2")
    all_alive(site)


def test_a_job_with_an_undecodable_file_name_in_code_is_handled_alone(site: Site) -> None:
    """``code/caf\\xe9.txt`` in A's job (submitted with prsctl submit's code), and files
    of such names its init() writes in its working folder: A's job
    ends with its state and reason, B's job completes exactly, no daemon stops, also
    while ``prsctl gc`` removes A's job; a leader started afterwards lives on as well."""
    folder = site.job_folder(site.a, "cafe")
    script = (folder / "code" / "score.py").read_text()
    (folder / "code" / "score.py").write_text(script.replace("    pass", ODD_WRITER, 1))
    odd = folder / "code" / os.fsdecode(b"caf\xe9.txt")
    odd.write_text("menu\n")
    (folder / "data" / os.fsdecode(b"d\xe9j\xe0.txt")).write_text("9\n")
    chown_tree(folder, site.a)
    from prsd.submit import submit

    spool = open_spool(site.spool, create=False)
    code, a_job = as_user(site.a, lambda: submit(folder, spool)[0])
    assert code == 0, a_job
    site.known.add(a_job)
    b_job = site.submit_as(site.b, "bee3", pause_s=0.5)
    ended = site.wait_ended(a_job)
    assert ended["state"] in ("Completed", "Failed", "Completed with failures"), ended
    exact_rows(site, b_job, "bee3")
    all_alive(site)
    code, text = prsctl_as(site.a, site, "status", "--json")
    assert code == 0 and a_job in text
    assert a_job in job_ids(spool)
    code, text = prsctl_as(site.a, site, "gc", "--older-than", "0")  # removes those names
    assert code == 0 and a_job in text, text
    assert not (site.jobs / a_job).exists()
    site.start(["leader"])
    b_last = site.submit_as(site.b, "bee4")
    exact_rows(site, b_last, "bee4")
    all_alive(site)
