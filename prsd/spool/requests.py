"""Users' requests about their jobs: small files in ``requests/``, answered by the leader.

Invariant: the uid that asked is the owner of the request file, read with ``fstat`` on
the descriptor that is then read, never from anything written inside it. A user may
write ``requests/`` (mode 1777, sticky, like ``inbox/``) but not another user's job
folder, and the sticky bit keeps users from renaming or removing each other's requests,
so a request file owned by uid U was put there by U (or root). The file is written
aside under a dot name and renamed into place (:func:`prsd.spool.atomic.write_atomic`),
so the leader never reads half a request.

Names carry the request: ``<job_id>.<action>.<token>``; the body repeats the job and the
action, and a body that disagrees with its name is refused. The leader answers in
``<name>.reply`` (one JSON object: ``ok`` and a one-line ``message``), written as the
daemons, readable by everyone, and removes the request. Replies are removed by the
leader some minutes later: a user cannot remove a daemon's file from a sticky folder.

Errors: :class:`RequestError` for a request that is not a plain, small, single-link
regular file with a matching body; it names the file and what is wrong.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prsd.errors import SpoolError
from prsd.spool.atomic import write_atomic

if TYPE_CHECKING:
    from prsd.spool.layout import SpoolLayout

ACTIONS = ("cancel", "remove", "discard")  # discard: a refused inbox folder (prsctl gc)
MAX_REQUEST_BYTES = 4096
REPLY_SUFFIX = ".reply"
_NAME_RE = re.compile(r"^([a-z0-9][a-z0-9_-]{0,99})\.([a-z]{1,20})\.([0-9a-f]{8,32})$")


class RequestError(SpoolError):
    """A request file that cannot be believed: a link, too big, or not a request."""


@dataclass(frozen=True)
class Request:
    """What a user asks: ``action`` on ``job_id``; ``token`` makes the name unique."""

    job_id: str
    action: str
    token: str

    @property
    def name(self) -> str:
        return f"{self.job_id}.{self.action}.{self.token}"

    def encode(self) -> bytes:
        return json.dumps({"job_id": self.job_id, "action": self.action}).encode() + b"\n"

    @classmethod
    def parse_name(cls, name: str) -> Request | None:
        """The request a file name stands for; None for anything else (temp files, replies)."""
        m = _NAME_RE.match(name)
        if m is None or m.group(2) not in ACTIONS:
            return None
        return cls(m.group(1), m.group(2), m.group(3))


@dataclass(frozen=True)
class Received:
    """A request as the leader read it: who asked is the file's owner."""

    request: Request
    uid: int


@dataclass(frozen=True)
class Reply:
    """The leader's answer to one request."""

    ok: bool
    message: str

    def encode(self) -> bytes:
        message = " ".join(self.message.split())  # one line, whatever the message held
        return json.dumps({"ok": self.ok, "message": message}).encode() + b"\n"

    @classmethod
    def decode(cls, data: bytes) -> Reply | None:
        try:
            raw = json.loads(data)
        except ValueError:
            return None
        if not isinstance(raw, dict):
            return None
        ok, message = raw.get("ok"), raw.get("message")
        if not isinstance(ok, bool) or not isinstance(message, str):
            return None
        return cls(ok, message)


def send_request(spool: SpoolLayout, job_id: str, action: str) -> Request:
    """Drop a request (as the calling user) into ``requests/``; returns it.

    Raises:
        OSError: ``requests/`` is missing or not writable by this user.
    """
    request = Request(job_id, action, secrets.token_hex(8))
    if Request.parse_name(request.name) != request:
        raise ValueError(f"not a request: {request.name!r}")
    write_atomic(spool.requests / request.name, request.encode())
    return request


def pending_names(spool: SpoolLayout) -> tuple[list[str], list[str]]:
    """(request names, other names) in ``requests/``, each sorted.

    "Other" are every other name (replies, temp files of a writer, strays), for the
    caller to tidy once they are old.
    """
    try:
        names = sorted(os.listdir(spool.requests))
    except FileNotFoundError:
        return [], []
    requests = [n for n in names if Request.parse_name(n) is not None]
    others = [n for n in names if Request.parse_name(n) is None]
    return requests, others


def read_request(spool: SpoolLayout, name: str) -> Received:
    """Read one request by descriptor, without following links.

    Raises:
        RequestError: the name is not a request's, or the file is not a regular file
            with one link, is larger than MAX_REQUEST_BYTES, or its body disagrees
            with its name.
        FileNotFoundError: it is gone (answered by another leader, or withdrawn).
    """
    request = Request.parse_name(name)
    path = spool.requests / name
    if request is None:
        raise RequestError(f"{path} is not named <job>.<action>.<token>")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as exc:  # ELOOP: a symlink
        raise RequestError(f"cannot open {path}: {exc.strerror}") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            raise RequestError(f"{path} is not a plain file with a single link")
        data = os.read(fd, MAX_REQUEST_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_REQUEST_BYTES:
        raise RequestError(f"{path} is larger than {MAX_REQUEST_BYTES} bytes")
    try:
        body = json.loads(data)
    except ValueError as exc:
        raise RequestError(f"{path} is not JSON") from exc
    if not isinstance(body, dict) or (body.get("job_id"), body.get("action")) != (
        request.job_id,
        request.action,
    ):
        raise RequestError(f"{path}: the body does not name the job and action of its name")
    return Received(request, info.st_uid)


def reply_name(request_name: str) -> str:
    return request_name + REPLY_SUFFIX


def write_reply(spool: SpoolLayout, request_name: str, reply: Reply) -> None:
    """Answer a request (replacing anything planted under the reply's name, links included).

    Raises:
        OSError: ``requests/`` is not writable, or a folder sits under the reply's name.
    """
    write_atomic(spool.requests / reply_name(request_name), reply.encode(), durable=False)


def read_reply(spool: SpoolLayout, request: Request) -> Reply | None:
    """The leader's answer to ``request``, or None while there is none.

    Raises:
        OSError: the reply exists but cannot be read.
    """
    path = spool.requests / reply_name(request.name)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid not in (0, _daemon_uid(spool)):
            return None  # not the daemons' answer: keep waiting for theirs
        data = os.read(fd, MAX_REQUEST_BYTES)
    finally:
        os.close(fd)
    return Reply.decode(data)


def _daemon_uid(spool: SpoolLayout) -> int:
    """The uid the daemons run as: the owner of ``leader/`` (root on a deployed spool)."""
    try:
        return os.stat(spool.leader).st_uid
    except OSError:
        return 0


def remove(spool: SpoolLayout, name: str) -> None:
    """Remove a request, reply or stray from ``requests/`` (gone already is fine)."""
    (spool.requests / name).unlink(missing_ok=True)
