"""The systemd units: ``systemd-analyze verify``, the options that matter, and sd_notify for real."""

from __future__ import annotations

import configparser
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from prsd.errors import ExitCode
from prsd.sdnotify import feed_watchdog, notify, watchdog_interval_s
from tests.helpers import wait_until

ROOT = Path(__file__).resolve().parents[2]
UNITS = ("prsd-leader.service", "prsd-agent.service")
PRSD = Path(sys.executable).with_name("prsd")


def _verify(folder: Path, *names: str) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("systemd-analyze")
    assert tool, "systemd-analyze is missing: .ci/run installs the systemd package"
    return subprocess.run(
        [tool, "verify", *(str(folder / n) for n in names)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _installed_copy(tmp_path: Path, name: str) -> Path:
    """The unit with ExecStart pointing at this checkout's prsd (verify checks it exists)."""
    text = (ROOT / "systemd" / name).read_text(encoding="utf-8")
    assert "/opt/prsd/venv/bin/prsd" in text
    (tmp_path / name).write_text(
        text.replace("/opt/prsd/venv/bin/prsd", str(PRSD)), encoding="utf-8"
    )
    return tmp_path / name


def _service(name: str) -> dict[str, list[str]]:
    parser = configparser.ConfigParser(strict=False, interpolation=None, delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    text = (ROOT / "systemd" / name).read_text(encoding="utf-8")
    options: dict[str, list[str]] = {}
    section = ""
    for line in text.splitlines():
        if line.startswith("["):
            section = line.strip("[]")
        elif "=" in line and not line.startswith("#") and section == "Service":
            key, _, value = line.partition("=")
            options.setdefault(key.strip(), []).append(value.strip())
    return options


def test_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    """Both units verify without a single complaint."""
    for name in UNITS:
        _installed_copy(tmp_path, name)
    result = _verify(tmp_path, *UNITS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert str(tmp_path) not in result.stdout + result.stderr, result.stdout + result.stderr


def test_verify_catches_a_broken_unit(tmp_path: Path) -> None:
    """The check can fail: a misspelt option is reported for our file."""
    unit = _installed_copy(tmp_path, "prsd-agent.service")
    unit.write_text(unit.read_text().replace("KillMode=mixed", "KillMood=mixed"), encoding="utf-8")
    result = _verify(tmp_path, "prsd-agent.service")
    assert "KillMood" in result.stdout + result.stderr


@pytest.mark.parametrize("name", UNITS)
def test_unit_options(name: str) -> None:
    """Type=notify with a watchdog, KillMode=mixed, restarts on every exit but a clean one
    (and, for the agent, a node id held by another live agent); a waiting start never
    times out."""
    service = _service(name)
    assert service["Type"] == ["notify"]
    assert int(service["WatchdogSec"][0]) > 0
    assert service["KillMode"] == ["mixed"]
    assert service["Restart"] == ["on-failure"]
    assert service["TimeoutStartSec"] == ["infinity"]
    prevented = {int(c) for c in " ".join(service.get("RestartPreventExitStatus", [])).split()}
    assert prevented == ({ExitCode.NODE_ID_TAKEN} if "agent" in name else set())
    assert service["EnvironmentFile"] == ["/etc/prsd/prsd.env"]


def test_agent_keeps_gpu_devices_reachable() -> None:
    """No option that would hide /dev/nvidia* from the agent's workers."""
    service = _service("prsd-agent.service")
    for option in (
        "PrivateDevices",
        "DevicePolicy",
        "DeviceAllow",
        "ProtectClock",
        "MemoryDenyWriteExecute",
    ):
        assert option not in service, option
    caps = set(service["CapabilityBoundingSet"][0].split())
    assert {"CAP_SETUID", "CAP_SETGID", "CAP_KILL"} <= caps and "CAP_SYS_ADMIN" not in caps


def test_the_leader_is_scheduled_before_the_agents_work() -> None:
    """The leader, which every node's next task waits for, gets the CPU first on a busy
    machine (a lower nice value, a higher cgroup weight); the agent's unit, whose cgroup
    holds the users' workers, keeps the defaults."""
    leader, agent = _service("prsd-leader.service"), _service("prsd-agent.service")
    assert int(leader["Nice"][0]) < 0
    assert int(leader["CPUWeight"][0]) > 100
    assert "Nice" not in agent and "CPUWeight" not in agent


@pytest.mark.parametrize("name", UNITS)
def test_every_option_is_documented(name: str) -> None:
    """docs/deploy.md explains each option the unit sets."""
    guide = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    missing = [key for key in _service(name) if f"`{key}=" not in guide]
    assert not missing, f"options of {name} not explained in docs/deploy.md: {missing}"


def test_environment_example_names_the_variables_prsd_reads() -> None:
    """The example environment file sets the spool, and the units use its variables."""
    example = (ROOT / "systemd" / "prsd.env.example").read_text(encoding="utf-8")
    assert "PRSD_SPOOL=" in example and "PRSD_NODE_ID=" in example
    for name in UNITS:
        assert "${PRSD_SPOOL}" in (ROOT / "systemd" / name).read_text(encoding="utf-8")


def test_watchdog_interval_rules() -> None:
    """Half of WATCHDOG_USEC; nothing without it, or for a process it does not name."""
    assert watchdog_interval_s({"WATCHDOG_USEC": "60000000"}) == 30.0
    assert watchdog_interval_s({}) == 0.0
    assert watchdog_interval_s({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "1"}, pid=2) == 0.0
    assert watchdog_interval_s({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "7"}, pid=7) == 1.0
    assert not notify("READY=1", {})


def _socket(tmp_path: Path) -> tuple[socket.socket, str]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    path = str(tmp_path / "notify.sock")
    sock.bind(path)
    sock.settimeout(0.2)
    return sock, path


def _drained(sock: socket.socket, into: list[str]) -> list[str]:
    """``into`` after adding what is waiting now."""
    _drain(sock, into)
    return into


def _drain(sock: socket.socket, into: list[str]) -> None:
    """The next datagram, if one comes within the socket's 0.2 s timeout."""
    try:
        into.append(sock.recv(4096).decode())
    except TimeoutError:
        pass


@pytest.mark.parametrize("role", ["leader", "agent"])
def test_daemon_reports_ready_and_feeds_the_watchdog(tmp_path: Path, role: str) -> None:
    """The real daemon sends READY=1 (with a STATUS) and then WATCHDOG=1 at half WatchdogSec."""
    sock, path = _socket(tmp_path)
    env = dict(os.environ, NOTIFY_SOCKET=path, WATCHDOG_USEC="200000", PRSD_GPU_COUNT="0")
    args = [str(PRSD), role, "--spool", str(tmp_path / "spool")]
    if role == "agent":
        args += ["--node-id", "n1"]
    with open(tmp_path / "daemon.log", "wb") as log:
        proc = subprocess.Popen(args, env=env, stdout=log, stderr=log)
    got: list[str] = []
    try:
        wait_until(lambda: _drained(sock, got).count("WATCHDOG=1") >= 3, 30, "pings")
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        sock.close()
    ready = [m for m in got if m.startswith("READY=1")]
    assert len(ready) == 1 and "STATUS=" in ready[0] and str(tmp_path / "spool") in ready[0]
    assert got.index(ready[0]) < next(i for i, m in enumerate(got) if m == "WATCHDOG=1")


def test_no_ready_for_a_refused_spool(tmp_path: Path) -> None:
    """A spool that fails the start-up check: exit 3 with the reason, READY never sent."""
    sock, path = _socket(tmp_path)
    spool = tmp_path / "spool"
    for name in ("inbox", "jobs", "active", "nodes", "leader"):
        (spool / name).mkdir(parents=True)
    (spool / "jobs").chmod(0o777)  # anyone could forge tasks: a warning, not a refusal
    (spool / ".doctor").write_text("a file where the self-test makes its folder")
    env = dict(os.environ, NOTIFY_SOCKET=path)
    result = subprocess.run(
        [str(PRSD), "leader", "--spool", str(spool)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    got: list[str] = []
    _drain(sock, got)
    sock.close()
    assert result.returncode == ExitCode.SPOOL_REFUSED, result.stderr
    assert "refused" in result.stderr and ".doctor" in result.stderr
    assert not [m for m in got if "READY=1" in m]


@pytest.mark.parametrize("stalled", ["", "a job step has not returned for 31 s"])
def test_the_watchdog_is_fed_only_while_work_makes_progress(tmp_path: Path, stalled: str) -> None:
    """WATCHDOG=1 while the daemon's work returns in time; while a step hangs no ping
    (systemd then restarts it), only STATUS=no progress: ..."""
    sock, path = _socket(tmp_path)
    env = {"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "100000"}

    async def feed_for_a_while() -> None:
        with anyio.move_on_after(0.3):
            await feed_watchdog(env, lambda: stalled)

    got: list[str] = []
    with sock:
        anyio.run(feed_for_a_while)
        for _ in range(10):
            _drain(sock, got)
    assert got, "nothing was sent"
    if stalled:
        assert "WATCHDOG=1" not in got and f"STATUS=no progress: {stalled}" in got, got
    else:
        assert set(got) == {"WATCHDOG=1"}, got
