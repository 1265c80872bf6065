"""Which workers the fork server may give: the agent's own uid and interpreter, and the
same variables an interpreter reads at its start (``PYTHON*``, ``LD_*``)."""

from __future__ import annotations

import sys

from prsd.agent.forks import can_fork

SERVER = {"PATH": "/venv/bin:/usr/bin", "PYTHONFAULTHANDLER": "1", "LANG": "C.UTF-8"}


def test_a_worker_like_the_server_is_forked() -> None:
    env = {**SERVER, "MY_SETTING": "x", "CUDA_VISIBLE_DEVICES": "1", "HOME": "/root"}
    assert can_fork(SERVER, env, None, None)
    assert can_fork(SERVER, env, sys.executable, None)


def test_another_user_or_interpreter_is_spawned() -> None:
    assert not can_fork(SERVER, dict(SERVER), None, 1001)
    assert not can_fork(SERVER, dict(SERVER), "/opt/conda/envs/job/bin/python", None)


def test_other_start_up_variables_are_spawned() -> None:
    for name, value in (("PYTHONPATH", "/x"), ("PYTHONHASHSEED", "0"), ("LD_PRELOAD", "a.so")):
        assert not can_fork(SERVER, {**SERVER, name: value}, None, None), name
    without = {k: v for k, v in SERVER.items() if k != "PYTHONFAULTHANDLER"}
    assert not can_fork(SERVER, without, None, None)
