"""Another user's error text and jobs stay theirs: two real users against root daemons.

User B's job fails with a secret in its error; user A reads every status record and
file a user can reach and finds state and counts but never the text, while A's own
job completes exactly. A forged ``pipelines/<id>/`` record of A's naming B's running
job shows that step Lost, and B's job keeps its own row and completes exactly.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import pytest

from prsd.spool.askers import ADMIN_GROUP_ENV
from prsd.spool.opening import open_spool
from prsd.spool.pipelinerecord import PipelineRecord, StepRecord, pipelines_folder
from tests.helpers import wait_until
from tests.hostile.identity_site import Site, exact_rows, prsctl_as, reader, running_site
from tests.realusers import (
    User,
    as_user,
    chown_tree,
    real_users,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

SECRET = "BOB-PRIVATE-SECRET token=hunter2"
FAILING = f"""
def init():
    pass
def run(mini_batch):
    raise ValueError("{SECRET}")
"""


ADMINS: list[User] = []
"""The admin of this module's spool: a third user whose own group is PRSD_ADMIN_GROUP."""


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    """A root leader and agent on a fresh spool; users A, B and an admin."""
    with real_users(3) as users:
        admin = users[2]
        ADMINS[:] = [admin]
        env = {ADMIN_GROUP_ENV: admin.name}  # the admin's own group (useradd -U)
        with running_site(users, "prsd-privacy-", env) as s:
            yield s


def failing_job_of_b(site: Site) -> str:
    folder = site.job_folder(site.b, "secretive")
    (folder / "code" / "score.py").write_text(FAILING, encoding="utf-8")
    (folder / "job.yaml").write_text(
        (folder / "job.yaml").read_text() + "retry_settings: {max_retries: 0}\n", encoding="utf-8"
    )
    chown_tree(folder, site.b)
    from prsd.submit import submit

    spool = open_spool(site.spool, create=False)
    code, job_id = as_user(site.b, lambda: submit(folder, spool)[0])
    assert code == 0, job_id
    site.known.add(job_id)
    return job_id


def test_another_users_error_text_is_never_shown(site: Site) -> None:
    """A sees B's failed job (state, counts) in status and --json, never its error text;
    B and the admin group see the text as before; A's own job completes exactly meanwhile."""
    b_job = failing_job_of_b(site)
    a_job = site.submit_as(site.a, "ant", pause_s=0.5)
    assert site.wait_ended(b_job)["state"] == "Failed", site.log()[-4000:]
    exact_rows(site, a_job, "ant")

    code, text = prsctl_as(site.a, site, "status", "--json")
    assert code == 0
    rows = {d["job_id"]: d for d in json.loads(text)["jobs"]}
    assert rows[b_job]["state"] == "Failed" and rows[b_job]["failed_mbs"] > 0, rows[b_job]
    assert SECRET not in text and "hunter2" not in text
    code, text = prsctl_as(site.a, site, "status")
    assert code == 0 and b_job in text and "Failed" in text and "hunter2" not in text
    code, text = prsctl_as(site.a, site, "status", b_job, "--json")
    assert "hunter2" not in text
    state = site.jobs / b_job / "state"
    for name in os.listdir(state):
        code, out = as_user(site.a, reader(state / name))
        assert code == 1 or "hunter2" not in out, f"A read {name}: {out}"

    code, text = prsctl_as(site.b, site, "status", "--json")
    rows = {d["job_id"]: d for d in json.loads(text)["jobs"]}
    assert SECRET in rows[b_job]["first_error"], rows[b_job]
    assert rows[b_job]["reason"] and rows[b_job]["last_errors"]
    code, text = prsctl_as(site.b, site, "status", b_job)
    assert code == 0 and "hunter2" in text, text
    code, text = prsctl_as(ADMINS[0], site, "status", "--json")
    rows = {d["job_id"]: d for d in json.loads(text)["jobs"]}
    assert SECRET in rows[b_job]["first_error"], "the admin group reads the error text too"


def test_a_forged_pipeline_naming_another_users_job_shows_it_lost(site: Site) -> None:
    """A's hand-made pipeline record naming B's running job: the step is Lost with the
    reason; B's job keeps its own row for everyone and completes exactly."""
    b_job = site.submit_as(site.b, "bee", pause_s=1.5)
    wait_until(lambda: (site.jobs / b_job / "owner.json").exists(), 60, "B's job taken in")
    pipelines_folder(open_spool(site.spool, create=False))
    pid = "fake-20260101-000000-abcd"
    record = PipelineRecord(
        pid, "fake", "pipeline.yaml", {"s1": StepRecord("s1", "parallel", b_job)}
    )
    folder = site.spool / "pipelines" / pid

    def forge() -> None:
        folder.mkdir()
        (folder / "pipeline.json").write_bytes(record.to_json())

    code, out = as_user(site.a, forge)
    assert code == 0, out
    for user in (site.a, site.b):
        code, text = prsctl_as(user, site, "status", "--json")
        doc = json.loads(text)
        (fake,) = [p for p in doc["pipelines"] if p["pipeline_id"] == pid]
        assert fake["steps"][0]["state"] == "Lost", fake
        assert "another user" in fake["steps"][0]["reason"], fake
        code, text = prsctl_as(user, site, "status")
        own_rows = [line for line in text.splitlines() if line.startswith(b_job)]
        assert own_rows, f"B's job lost its own row:\n{text}"
    exact_rows(site, b_job, "bee")
    code, text = prsctl_as(site.b, site, "status")
    assert any(line.startswith(b_job) and "Completed" in line for line in text.splitlines()), text
