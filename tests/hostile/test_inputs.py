"""A job's input is read with its owner's ids: the kernel decides (issue 28, cases 3, 4, 5, 9).

Real root daemons; alice (the fleet's owner) drops hostile jobs straight into
``inbox/`` (no prsctl checks), bob is a second real user whose private files she
names and whose good job finishes meanwhile with its exact rows.
"""

from __future__ import annotations

import json
import os
import stat
import textwrap
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tests.helpers import final_record, wait_until
from tests.hostile.fleet import Fleet, fleet, job_yaml
from tests.realusers import daemon_python, daemon_pythonpath, plain_user

if TYPE_CHECKING:
    import pwd
    from collections.abc import Callable

# Tabular workers need pandas: an interpreter every owner may run, with the suite's
# packages on its path (the suite's own may live under a 0700 /root).
PYTHON = daemon_python()

TABLE_SCRIPT = """
def init():
    pass
def run(mini_batch, mini_batch_context):
    key = mini_batch_context.partition_key_value
    return [f"{key['k']} {v}" for v in mini_batch["v"]]
"""


def _table_yaml(name: str, input_data: str, extra: str = "") -> str:
    return textwrap.dedent(
        f"""\
        type: parallel
        name: {name}
        input_data: {input_data}
        input_format: csv
        mini_batch_size: "1"
        resources: {{max_concurrency_per_instance: 1}}
        retry_settings: {{max_retries: 0}}
        task:
          code: ./code
          entry_script: score.py
          append_row_to: ./outputs/out.txt
          environment: {{python: {PYTHON}}}
          environment_variables: {{PYTHONPATH: "{daemon_pythonpath()}"}}
        """
    ) + textwrap.dedent(extra)


def _bobs_good_job(f: Fleet, bob: pwd.struct_passwd) -> None:
    f.drop("bobgood", job_yaml(f.python, name="bobgood"), user=bob)


def _bob_finished(f: Fleet, bob: pwd.struct_passwd) -> None:
    state, reason = f.final("bobgood")
    assert state == "Completed", (reason, f.log.read_text(errors="replace"))
    out = f.job("bobgood") / "outputs" / "out.txt"
    assert out.read_text(encoding="utf-8").splitlines() == [f"ok f{i}.txt" for i in range(4)]
    assert out.stat().st_uid == bob.pw_uid


def _failed(f: Fleet, name: str, *words: str) -> str:
    state, reason = f.final(name)
    assert state == "Failed", (name, reason, f.log.read_text(errors="replace"))
    for word in words:
        assert word in reason, (name, word, reason)
    assert "\n" not in reason
    return reason


def _nothing_of(job: Path, secrets: list[bytes]) -> None:
    """No file under the job folder holds any of ``secrets``."""
    for path in job.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            for secret in secrets:
                assert secret not in data, (path, secret)


def _as(user: pwd.struct_passwd, fn: Callable[[], None]) -> int:
    """Run ``fn`` as ``user`` in a forked child; its exit status (0: fn returned)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgroups(os.getgrouplist(user.pw_name, user.pw_gid))
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
            fn()
            code = 0
        except BaseException:  # noqa: BLE001 - the status says it
            code = 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_another_users_private_table_is_refused_by_the_kernel() -> None:
    """Case 3: a hand-dropped job naming bob's 0600 table in his 0700 folder, with
    partition_keys (grouped) and without (listed): both fail with the permission
    error naming the path; no row or name of bob's reaches alice's job."""
    with plain_user("prsdb") as bob, fleet("{base}/data") as f:
        private = f.base / "data" / "bob" / "private"
        private.mkdir(parents=True)
        (f.base / "data").chmod(0o755)
        (private / "secret.csv").write_text("k,v\nBOB-SECRET-ROW,1\n")
        (private / "secret-name-42.txt").write_text("x\n")
        for path in (private.parent, private, *private.iterdir()):
            os.chown(path, bob.pw_uid, bob.pw_gid)
        private.chmod(0o700)
        (private / "secret.csv").chmod(0o600)
        _bobs_good_job(f, bob)
        secret = private / "secret.csv"
        f.drop(
            "grouped",
            _table_yaml("grouped", str(secret), "partition_keys: [k]\n"),
            TABLE_SCRIPT,
        )
        f.drop("listed", job_yaml(f.python, name="listed", input_data=str(private)))
        _failed(f, "grouped", "Permission denied", str(secret))
        _failed(f, "listed", "Permission denied", str(private))
        for name in ("grouped", "listed"):
            _nothing_of(f.job(name), [b"BOB-SECRET-ROW", b"secret-name-42"])
        _bob_finished(f, bob)
        assert f.alive(), f.log.read_text(errors="replace")


def _wait_spill(f: Fleet, job: Path) -> None:
    """Until the planner's first bucket file shows (the job must not have ended first)."""
    parts = job / "partitions"

    def spilled() -> bool:
        final = job / "state" / "final.json"
        if final.exists():
            raise AssertionError((final_record(final.parent), f.log.read_text(errors="replace")))
        return parts.is_dir() and any(p.name.startswith("bucket-") for p in parts.iterdir())

    wait_until(spilled, 120, "the grouping's first spill")


def _sales(rows: int) -> Callable[[Path], None]:
    def fill(data: Path) -> None:
        with open(data / "a.csv", "w", encoding="utf-8") as out:
            out.write("k,v\n")
            line = "".join(f"k{i % 3},{'x' * 60}\n" for i in range(1000))
            out.writelines(line for _ in range(rows // 1000))
        (data / "b.csv").write_text("k,v\nk1,small\n", encoding="utf-8")

    return fill


def test_partition_groups_are_private_to_the_owner() -> None:
    """Case 4: partitions/ (groups.json, groups/*.csv) is the owner's, mode 0700: bob
    cannot list or read it; alice's workers read it and her job completes exactly."""
    with plain_user("prsdb") as bob, fleet("{base}") as f:
        _bobs_good_job(f, bob)
        f.drop(
            "parts",
            _table_yaml("parts", "./data", "partition_keys: [k]\n"),
            TABLE_SCRIPT,
            data=_sales(3000),
        )
        state, reason = f.final("parts")
        assert state == "Completed", (reason, f.log.read_text(errors="replace"))
        job = f.job("parts")
        rows = (job / "outputs" / "out.txt").read_text().splitlines()
        x = "x" * 60
        per_key = [1002, 999, 999]  # a.csv: three blocks of 1000 rows, keys k0 k1 k2 in turn
        expected = [f"k{k} {x}" for k in range(3) for _ in range(per_key[k])]
        expected.insert(2001, "k1 small")  # b.csv's row ends k1's group
        assert rows == expected
        parts = job / "partitions"
        info = parts.lstat()
        assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (f.user.pw_uid, 0o700)
        group = next((parts / "groups").iterdir())
        for path in (parts / "groups.json", group):
            assert path.stat().st_uid == f.user.pw_uid, path

        def bob_reads() -> None:
            for path in (parts / "groups.json", group):
                try:
                    path.read_bytes()
                except PermissionError:
                    continue
                raise AssertionError(f"{path} is readable by another user")
            try:
                os.listdir(parts)
            except PermissionError:
                return
            raise AssertionError(f"{parts} is listable by another user")

        assert _as(bob, bob_reads) == 0
        _bob_finished(f, bob)


def test_a_table_file_swapped_for_a_link_to_shadow_while_grouping() -> None:
    """Case 5: while the planner groups the big file, alice replaces the small one by
    a link to /etc/shadow: the planner (alice's ids) cannot open it; nothing of
    /etc/shadow lands anywhere in the job."""
    shadow = [line.encode() for line in Path("/etc/shadow").read_text().splitlines() if line]
    with plain_user("prsdb") as bob, fleet("{base}") as f:
        _bobs_good_job(f, bob)
        f.drop(
            "swap",
            _table_yaml("swap", "./data", "partition_keys: [k]\n"),
            TABLE_SCRIPT,
            data=_sales(1_500_000),
        )
        job = f.job("swap")
        small = job / "data" / "b.csv"
        parts = job / "partitions"
        _wait_spill(f, job)
        swapped = time.monotonic()
        small.unlink()
        small.symlink_to("/etc/shadow")
        assert not (parts / "groups.json").exists(), "the swap came after the grouping ended"
        _failed(f, "swap", "Permission denied", "b.csv")
        assert time.monotonic() - swapped < 120
        _nothing_of(job, [s for s in shadow if len(s) > 8])
        _bob_finished(f, bob)


def test_a_fifo_as_csv_input_fails_that_job_alone() -> None:
    """Case 9: a hand-dropped job whose CSV input is a FIFO ends Failed saying so, at
    once; the leader keeps its lease and bob's later job completes."""
    with plain_user("prsdb") as bob, fleet("{base}") as f:

        def fifo(data: Path) -> None:
            os.mkfifo(data / "in.csv")

        f.drop("fifo", _table_yaml("fifo", "./data/in.csv"), TABLE_SCRIPT, data=fifo)
        _failed(f, "fifo", "FIFO", "in.csv")
        f.drop(
            "fifokeys",
            _table_yaml("fifokeys", "./data/in.csv", "partition_keys: [k]\n"),
            TABLE_SCRIPT,
            data=fifo,
        )
        _failed(f, "fifokeys", "FIFO", "in.csv")
        _bobs_good_job(f, bob)
        _bob_finished(f, bob)
        beat = f.spool / "leader" / "heartbeat.json"
        first = json.loads(beat.read_bytes())
        time.sleep(2.5)
        later = json.loads(beat.read_bytes())
        assert later["epoch"] == first["epoch"] == 1, "the first leader still holds the lease"
        assert later["seq"] > first["seq"], "and renews it"
        assert f.alive(), f.log.read_text(errors="replace")


def _planners(uid: int) -> list[int]:
    """Pids of input planner processes running as ``uid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
            owner = entry.stat().st_uid
        except OSError:
            continue
        if b"prsd.leader.plan.planhelper" in command and owner == uid:
            found.append(int(entry.name))
    return found


def test_a_planner_killed_mid_grouping_fails_that_job_alone() -> None:
    """The plan stream end to end: alice's planner (her uid) killed with kill -9 while
    it groups; her job ends Failed saying so, no planner is left, bob's job completes."""
    with plain_user("prsdb") as bob, fleet("{base}") as f:
        f.drop(
            "killed",
            _table_yaml("killed", "./data", "partition_keys: [k]\n"),
            TABLE_SCRIPT,
            data=_sales(1_500_000),
        )
        _wait_spill(f, f.job("killed"))
        (pid,) = _planners(f.user.pw_uid)
        _bobs_good_job(f, bob)
        os.kill(pid, 9)
        _failed(f, "killed", "input planner", "run as", "killed by signal 9")
        assert _planners(f.user.pw_uid) == []
        _bob_finished(f, bob)
        assert f.alive(), f.log.read_text(errors="replace")
