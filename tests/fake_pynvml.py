"""A fake ``pynvml`` (nvidia-ml-py) for machines without GPUs.

Tests copy this file as ``pynvml.py`` into a folder put first on ``PYTHONPATH`` (or
put the module into ``sys.modules``), so prsd's NVML edge talks to it instead of
the driver. It is configured by environment variables, read at each call:

- ``FAKE_NVML_GPUS``: how many GPUs (default 0);
- ``FAKE_NVML_UNHEALTHY``: comma-separated indices whose queries fail with
  "GPU is lost" (as after an Xid 79);
- ``FAKE_NVML_INIT_ERROR``: if set, ``nvmlInit`` fails with this message.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


class NVMLError(Exception):
    """As pynvml's: the base of every NVML failure."""


@dataclass(frozen=True)
class _Handle:
    index: int


@dataclass(frozen=True)
class _Memory:
    total: int = 80 * 1024**3
    free: int = 80 * 1024**3
    used: int = 0


@dataclass(frozen=True)
class _Utilization:
    gpu: int = 0
    memory: int = 0


def _count() -> int:
    return int(os.environ.get("FAKE_NVML_GPUS", "0") or 0)


def _unhealthy() -> set[int]:
    text = os.environ.get("FAKE_NVML_UNHEALTHY", "")
    return {int(x) for x in text.split(",") if x.strip()}


def _check(handle: _Handle) -> None:
    if handle.index in _unhealthy():
        raise NVMLError("GPU is lost")


def nvmlInit() -> None:
    message = os.environ.get("FAKE_NVML_INIT_ERROR")
    if message:
        raise NVMLError(message)


def nvmlShutdown() -> None:
    return None


def nvmlDeviceGetCount() -> int:
    return _count()


def nvmlDeviceGetHandleByIndex(index: int) -> _Handle:
    if not 0 <= index < _count():
        raise NVMLError("Invalid Argument")
    return _Handle(index)


def nvmlDeviceGetUUID(handle: _Handle) -> str:
    _check(handle)
    return f"GPU-fake-{handle.index:04d}"


def nvmlDeviceGetName(handle: _Handle) -> str:
    _check(handle)
    return "Fake GPU"


def nvmlDeviceGetMemoryInfo(handle: _Handle) -> _Memory:
    _check(handle)
    return _Memory()


def nvmlDeviceGetUtilizationRates(handle: _Handle) -> _Utilization:
    _check(handle)
    return _Utilization()


def nvmlDeviceGetComputeRunningProcesses(handle: _Handle) -> list[object]:
    _check(handle)
    return []
