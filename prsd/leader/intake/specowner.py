"""Loading a job's spec at intake with its owner's ids: :func:`load_as_owner`.

Promise: under a root daemon, the spec of a job owned by someone else is loaded by
one short-lived process with the owner's uid, gid and groups and no capabilities
(:mod:`prsd.leader.intake.spechelper`, started with :func:`prsd.asowner.spawn.spawn_as`).
Every look at the user's side that loading needs (the job file and ``origin.json``,
input paths and their folders, MLTable files and pattern listings, the code folder,
environment files) is then the kernel's answer to the owner: a path in another
user's private folder reads "Permission denied" whether it exists or not, and root
never opens a user's file to load a spec. Who the owner is comes from the job's
owner record only (:func:`prsd.leader.plan.planowner.plan_identity`: no valid record,
no load). A root-owned job, and every job of a daemon that is not root, is loaded
in this process, which has the owner's ids already.

The allowed roots are read here (the daemons' settings) and handed to the helper,
whose environment is a fixed minimal one. Its answer is parsed as data
(:meth:`JobSpec.from_json`); what the spec names is later read, run and written with
the owner's ids too (the planner, the workers, the owner side).

Errors: :class:`~prsd.errors.JobSpecError` with the loader's key, place and problem
(the job fails with it, as a spec loaded in-process would); :class:`InputError`
when the owner is unknown or the helper cannot start, dies, hangs past
``PRSD_SPEC_LOAD_TIMEOUT_S`` (:func:`prsd.tunables.spec_load_timeout_s`, 60 s by
default: it is killed; one whose call sleeps in a hung mount's kernel code, which no
signal ends, is left to end on its own) or answers nonsense.
"""

from __future__ import annotations

import os
import subprocess
from typing import TYPE_CHECKING

from prsd.asowner.spawn import spawn_as
from prsd.errors import InputError, JobSpecError
from prsd.jobspec import JobSpec
from prsd.jobspec.load import load_job_spec
from prsd.jobspec.paths import configured_roots_text
from prsd.leader.intake.spechelper import MODULE, encode_request
from prsd.leader.plan.planowner import plan_identity
from prsd.logconfig import get_logger
from prsd.tunables import spec_load_timeout_s
from prsd.wire.fields import Fields

if TYPE_CHECKING:
    from pathlib import Path

    from prsd.owner import RunAs
    from prsd.spool.layout import JobLayout

_TAIL = 400  # characters of the helper's stderr kept in a reason
_REAP_S = 5.0  # how long a killed helper is waited for
log = get_logger("prsd.leader")


def load_as_owner(layout: JobLayout) -> JobSpec:
    """The job's spec, loaded with its owner's ids (see the module doc).

    Raises:
        JobSpecError: the spec cannot be run as written.
        InputError: the owner is unknown, or the helper failed (see the module doc).
    """
    run_as = plan_identity(layout)
    if run_as is None:
        return load_job_spec(layout.root, spool_job_dir=layout.root)
    request = encode_request(layout.root, run_as.uid, os.geteuid(), configured_roots_text())
    return _answer(_ask(run_as, request, layout.root), run_as)


def _who(run_as: RunAs) -> str:
    return f"{run_as.name} (uid {run_as.uid})"


def _ask(run_as: RunAs, request: bytes, layout_root: Path) -> tuple[int, bytes, bytes]:
    try:
        proc = spawn_as(
            run_as, MODULE, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise InputError(
            f"the spec loader could not be started as {_who(run_as)}: {exc} (the daemons' "
            "interpreter must be one every job owner may run)"
        ) from None
    limit = spec_load_timeout_s()
    try:
        out, err = proc.communicate(request, timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        try:
            proc.communicate(timeout=_REAP_S)
        except subprocess.TimeoutExpired:
            log.warning(  # a call already sent to a hung mount sleeps until the mount answers
                "a killed spec loader has not ended yet; it is left to end on its own",
                pid=proc.pid,
                job_root=str(layout_root),
            )
        raise InputError(
            f"the spec of this job did not load within {limit:g} s (its loader, run as "
            f"{_who(run_as)}, was killed: is an input path on a slow or hung mount, or "
            "are there very many inputs?)"
        ) from None
    return proc.returncode, out, err


def _answer(got: tuple[int, bytes, bytes], run_as: RunAs) -> JobSpec:
    code, out, err = got
    try:
        reply = Fields.of_json(out, "the spec loader's answer")
        if reply.get("ok", bool):
            return JobSpec.from_json(reply.get("spec", str))
        key, location, problem = (reply.get(k, str) for k in ("key", "location", "problem"))
    except ValueError:  # RecordError, or a spec that is not one
        how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
        tail = err.decode("utf-8", "replace").strip()[-_TAIL:]
        said = f": {tail}" if tail else ""
        raise InputError(
            f"the spec loader run as {_who(run_as)} {how} without an answer{said}"
        ) from None
    raise JobSpecError(key, location, problem)
