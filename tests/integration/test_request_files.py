"""Request files in ``requests/`` and the leader's desk: the asker is the file's owner; links, forgeries refused."""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING

import pytest

from prsd.doctor.probes import shared_folder_problems
from prsd.leader.requests.desk import RequestDesk
from prsd.spool.opening import open_spool
from prsd.spool.requests import (
    Reply,
    Request,
    RequestError,
    pending_names,
    read_reply,
    read_request,
    send_request,
    write_reply,
)

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.spool.layout import SpoolLayout


@pytest.fixture
def spool(tmp_path: Path) -> SpoolLayout:
    return open_spool(tmp_path / "spool")


def test_requests_folder_is_sticky_and_open_to_all(spool: SpoolLayout) -> None:
    """open_spool makes requests/ mode 1777, like a sticky inbox; the doctor finds it fine."""
    assert stat.S_IMODE(os.stat(spool.requests).st_mode) == 0o1777
    assert "requests" not in " ".join(shared_folder_problems(spool.root))


@pytest.mark.parametrize(
    ("mode", "problem"),
    [
        (0o777, "requests/ is writable by everyone without the sticky bit (chmod +t)"),
        (0o755, "requests/ is not writable by everyone: users cannot cancel their jobs"),
    ],
)
def test_doctor_names_a_wrong_requests_mode(spool: SpoolLayout, mode: int, problem: str) -> None:
    """Unsticky: users could remove each other's requests; closed: nobody can cancel."""
    spool.requests.chmod(mode)
    assert any(p.startswith(problem) for p in shared_folder_problems(spool.root))


def test_the_asker_is_the_files_owner(spool: SpoolLayout) -> None:
    """The uid read back is the file's owner, whatever its body says."""
    request = send_request(spool, "job-1", "cancel")
    os.chown(spool.requests / request.name, 4242, 4242)
    got = read_request(spool, request.name)
    assert (got.request, got.uid) == (request, 4242)
    assert pending_names(spool) == ([request.name], [])


def test_links_and_forgeries_are_refused(spool: SpoolLayout, tmp_path: Path) -> None:
    """A symlink, a hard link, a body naming another job, an oversized file: RequestError."""
    secret = tmp_path / "secret"
    secret.write_bytes(Request("job-1", "cancel", "0" * 8).encode())
    os.symlink(secret, spool.requests / "job-1.cancel.00000001")
    os.link(secret, spool.requests / "job-1.cancel.00000002")
    (spool.requests / "job-1.cancel.00000003").write_bytes(
        Request("job-2", "cancel", "0" * 8).encode()
    )
    (spool.requests / "job-1.cancel.00000004").write_bytes(b"{" + b" " * 5000 + b"}")
    for name, why in [
        ("job-1.cancel.00000001", "cannot open"),
        ("job-1.cancel.00000002", "single link"),
        ("job-1.cancel.00000003", "does not name the job"),
        ("job-1.cancel.00000004", "larger than"),
    ]:
        with pytest.raises(RequestError, match=why):
            read_request(spool, name)


def test_only_the_daemons_reply_is_believed(spool: SpoolLayout) -> None:
    """A reply planted by a user (not the daemons' uid) is ignored; the daemons' is read."""
    request = send_request(spool, "job-1", "cancel")
    planted = spool.requests / (request.name + ".reply")
    planted.write_bytes(Reply(True, "forged").encode())
    os.chown(planted, 4242, 4242)
    assert read_reply(spool, request) is None
    write_reply(spool, request.name, Reply(False, "job job-1 belongs to\nalice"))
    assert read_reply(spool, request) == Reply(False, "job job-1 belongs to alice")


def test_the_desk_answers_in_the_spool(spool: SpoolLayout) -> None:
    """A queued job's owner waits for intake; a stranger is refused at once; an unknown job
    is answered; a reply the desk cannot write (a folder planted there) still clears it."""
    queued = spool.inbox / "job-q"
    queued.mkdir()
    os.chown(queued, 4242, 4242)
    mine = send_request(spool, "job-q", "cancel")
    os.chown(spool.requests / mine.name, 4242, 4242)
    stranger = send_request(spool, "job-q", "cancel")
    os.chown(spool.requests / stranger.name, 4343, 4343)
    nowhere = send_request(spool, "job-none", "cancel")
    blocked = send_request(spool, "job-gone", "cancel")
    (spool.requests / (blocked.name + ".reply")).mkdir()
    desk = RequestDesk(spool, admin_group="")
    desk.step(0.0, {}, {})
    assert read_reply(spool, mine) is None and (spool.requests / mine.name).exists()
    refused = read_reply(spool, stranger)
    assert refused is not None and not refused.ok
    assert refused.message.startswith("job job-q belongs to 4242 (uid 4242): 4343 (uid 4343)")
    assert read_reply(spool, nowhere) == Reply(False, "no job job-none in the spool")
    assert not (spool.requests / blocked.name).exists()
    assert not (spool.requests / stranger.name).exists()
