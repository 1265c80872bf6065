"""The spec loader as a job's owner: ``python -m prsd.leader.intake.spechelper``.

Started by :mod:`prsd.leader.intake.specowner`, one per job taken in, with the job owner's
uid, gid and groups (:func:`prsd.asowner.spawn.spawn_as`), so every look at the
user's side while the spec is loaded (``job.yaml``, ``origin.json`` and the folder
it names, the input paths and the folders on their way, MLTable files and the
folders their patterns list, the code folder, environment files) is the kernel's
answer to that owner. It reads one request (JSON) on stdin: the job's folder in the
spool, the owner's and the daemons' uids and the daemons' settings the loader reads
(the allowed roots as the leader resolved them; the settings file is never read
here); it writes one
answer (JSON) on stdout: ``{"ok": true, "spec": TEXT}`` or ``{"ok": false, "key":
KEY, "location": WHERE, "problem": WHAT}``, and exits.

Errors: every failure to load is an answer (exit status 1), never a traceback; a
request it cannot read ends it with status 2 and nothing on stdout.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from prsd.errors import JobSpecError, PrsdError
from prsd.jobspec.load import load_job_spec
from prsd.jobspec.paths import ROOTS_ENV, SETTINGS_FILE_ENV
from prsd.wire.fields import Fields, RecordError

MODULE = "prsd.leader.intake.spechelper"


SETTINGS = ("PRSD_CONTAINER_RUNTIME", "PRSD_PYTHON_MISMATCH", "PRSD_ENV_SOURCE_BUILDS")
"""The daemons' settings the loader reads from the environment (for its notes and checks)."""


def encode_request(job_root: Path, owner_uid: int, daemon_uid: int, roots_text: str) -> bytes:
    """The request the leader writes on the helper's stdin: the job, the ids, and the
    daemons' settings the loader needs (``roots_text``: ``PRSD_ALLOWED_ROOTS`` as the
    leader resolved it), so the helper never reads the daemons' settings file."""
    settings = {name: os.environ[name] for name in SETTINGS if name in os.environ}
    settings[ROOTS_ENV] = roots_text
    settings[SETTINGS_FILE_ENV] = os.devnull
    obj = {
        "job_root": str(job_root),
        "owner_uid": owner_uid,
        "daemon_uid": daemon_uid,
        "settings": settings,
    }
    return json.dumps(obj).encode()


def answer(request: Fields) -> dict[str, Any]:
    """Load the request's spec here, with this process's ids; the answer to send.

    Raises:
        RecordError: the request lacks a field, or one is of the wrong type.
    """
    root = Path(request.get("job_root", str))
    settings = request.get("settings", dict)
    os.environ.update({str(k): str(v) for k, v in settings.items() if str(k).startswith("PRSD_")})
    owner_uid, daemon_uid = request.get("owner_uid", int), request.get("daemon_uid", int)
    try:
        spec = load_job_spec(root, spool_job_dir=root, owner_uid=owner_uid, daemon_uid=daemon_uid)
    except JobSpecError as exc:
        return {"ok": False, "key": exc.key, "location": exc.location, "problem": exc.problem}
    except PrsdError as exc:
        return {"ok": False, "key": "", "location": "", "problem": exc.one_line()}
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        return {"ok": False, "key": "", "location": "", "problem": f"cannot read{where}: {exc}"}
    return {"ok": True, "spec": spec.to_json()}


def main() -> int:
    try:
        request = Fields.of_json(sys.stdin.buffer.read(), "spec request")
        reply = answer(request)
    except RecordError:
        return 2
    except Exception as exc:  # noqa: BLE001 - said to the leader, which fails the job
        problem = f"the spec loader failed: {type(exc).__name__}: {exc}"
        reply = {"ok": False, "key": "", "location": "", "problem": problem}
    sys.stdout.buffer.write(json.dumps(reply).encode())
    sys.stdout.buffer.flush()
    return 0 if reply["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
