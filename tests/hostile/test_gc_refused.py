"""``prsctl gc`` removes the caller's refused inbox folders, with the owner's ids (issue 28).

Real root daemons and two real users. A and B leave folders without ``job.yaml`` in
the inbox; after the grace period the leader moves them aside into ``jobs/.refused/``.
``prsctl gc --dry-run`` as A lists A's folders only and removes nothing; ``prsctl gc``
as A removes them, but for one holding a folder of B's that A may not empty: the
kernel decides what goes, so it stays, and so do B's own. B's job completes exactly
meanwhile. B's hand-made ``discard`` request for A's folder is refused by the leader.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from prsd.spool.opening import open_spool
from prsd.spool.requests import read_reply, send_request
from tests.helpers import wait_until
from tests.hostile.identity_site import exact_rows, prsctl_as, running_site
from tests.realusers import as_user, real_users

if TYPE_CHECKING:
    from pathlib import Path

    from tests.hostile.identity_site import Site


def _asides(site: Site) -> dict[str, str]:
    """inbox name -> its folder's name in ``jobs/.refused/``, from the records."""
    folder = site.jobs / ".refused"
    found = {}
    for record in folder.glob("*.json") if folder.is_dir() else []:
        data = json.loads(record.read_bytes())
        found[data["inbox_name"]] = record.name.removesuffix(".json")
    return found


def _leave_folders(site: Site) -> None:
    inbox = site.spool / "inbox"

    def as_a() -> None:
        (inbox / "a-notes").mkdir()
        (inbox / "a-notes" / "notes.txt").write_text("A's notes\n")
        (inbox / "a-empty").mkdir()
        (inbox / "a-shared").mkdir()
        (inbox / "a-shared").chmod(0o777)  # B may make a folder in it

    def as_b() -> None:
        (inbox / "b-stuck").mkdir()
        (inbox / "a-shared" / "bobs").mkdir(mode=0o755)
        (inbox / "a-shared" / "bobs" / "file.txt").write_text("B's\n")

    for user, fn in ((site.a, as_a), (site.b, as_b)):
        code, out = as_user(user, fn)
        assert code == 0, out


def _forged_discard(site: Site, aside: str) -> str:
    """B's own ``discard`` request for ``aside``, dropped by hand; the leader's answer."""
    spool = open_spool(site.spool, create=False)

    def ask() -> str:
        request = send_request(spool, aside, "discard")
        found: list[str] = []

        def answered() -> bool:
            reply = read_reply(spool, request)
            found.extend([f"ok={reply.ok} {reply.message}"] if reply is not None else [])
            return bool(found)

        wait_until(answered, 60, "the leader's answer")
        return found[0]

    code, out = as_user(site.b, ask)
    assert code == 0, out
    return out


def test_prsctl_gc_removes_the_callers_refused_folders_as_the_owner() -> None:
    env = {"PRSD_INBOX_GRACE_S": "2"}
    with real_users(2) as users, running_site(users, "prsd-gcrefused-", env) as site:
        _leave_folders(site)
        names = {"a-notes", "a-empty", "a-shared", "b-stuck"}
        wait_until(lambda: set(_asides(site)) == names, 60, "the folders moved aside")
        asides = _asides(site)
        refused: Path = site.jobs / ".refused"
        b_job = site.submit_as(site.b, "bee")

        code, out = prsctl_as(site.a, site, "gc", "--older-than", "0", "--dry-run")
        assert code == 0, out
        for name in ("a-notes", "a-empty", "a-shared"):
            assert f"would remove refused inbox folder {asides[name]}" in out, out
        assert asides["b-stuck"] not in out, out
        assert all((refused / a).is_dir() for a in asides.values()), "a dry run removed"

        said = _forged_discard(site, asides["a-notes"])  # B asks for A's folder by hand
        assert said.startswith("ok=False") and "is not yours" in said, said
        assert (refused / asides["a-notes"] / "notes.txt").read_text() == "A's notes\n"

        code, out = prsctl_as(site.a, site, "gc", "--older-than", "0")
        for name in ("a-notes", "a-empty"):
            assert f"removed refused inbox folder {asides[name]}" in out, out
            assert not os.path.lexists(refused / asides[name])
            assert not os.path.lexists(refused / f"{asides[name]}.json")
        assert code != 0, out  # a-shared could not be emptied by A
        kept = refused / asides["a-shared"]
        assert (kept / "bobs" / "file.txt").read_text() == "B's\n"  # A's ids could not remove it
        assert (refused / f"{asides['a-shared']}.json").is_file()
        assert (refused / asides["b-stuck"]).is_dir()  # B's own stays
        assert (refused / f"{asides['b-stuck']}.json").is_file()

        exact_rows(site, b_job, "bee")  # before B's gc, which removes B's ended job too
        code, out = prsctl_as(site.b, site, "gc", "--older-than", "0")
        assert f"removed refused inbox folder {asides['b-stuck']}" in out, out
        assert not os.path.lexists(refused / asides["b-stuck"])
        assert (kept / "bobs").is_dir()  # A's folder is not B's to remove
