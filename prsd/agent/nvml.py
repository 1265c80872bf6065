"""The NVML edge: the only module that talks to the GPU driver (nvidia-ml-py).

It asks NVML for the GPUs and probes each one with a few cheap queries (handle,
UUID, name, memory). A GPU whose probe raises (``GPU is lost``, ``Unknown Error``
after an Xid, a driver mismatch) is reported unhealthy with NVML's message, and
:mod:`prsd.agent.gpu` never hands it to a worker.

NVML is asked (here and by the resource monitor, ``prsd.agent.probes``) only where
:func:`nvml_can_answer`: the NVIDIA driver shows a device (``/dev/nvidiactl``, or
WSL's ``/dev/dxg``): without one NVML cannot answer, and importing ``pynvml`` (with
``ctypes``) would cost every agent's and ``prsd run``'s start 20-50 ms for nothing.
``PRSD_NVML_ALWAYS=1`` asks NVML all the same (a container that hides ``/dev``).

Tests put a fake ``pynvml`` module ahead of the real one on ``PYTHONPATH``
(``tests/fake_pynvml.py``, with ``PRSD_NVML_ALWAYS=1``): this module is the edge it
replaces.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

DRIVER_DEVICES = ("/dev/nvidiactl", "/dev/dxg")  # one exists where the driver is loaded
ALWAYS_VARIABLE = "PRSD_NVML_ALWAYS"


@dataclass(frozen=True)
class GpuProbe:
    """One GPU as NVML sees it (index in NVML's order, which is PCI bus order)."""

    index: int
    healthy: bool
    name: str = ""
    problem: str = ""  # NVML's message when unhealthy


@dataclass(frozen=True)
class NvmlReport:
    """What NVML said: the GPUs, or why it could not be asked."""

    gpus: tuple[GpuProbe, ...]
    unavailable: str = ""  # "" when NVML answered


def nvml_can_answer() -> bool:
    """Is NVML worth loading here: a driver device exists (or ``PRSD_NVML_ALWAYS=1``)?"""
    if os.environ.get(ALWAYS_VARIABLE, "").strip() == "1":
        return True
    return any(os.path.exists(d) for d in DRIVER_DEVICES)


def probe_gpus() -> NvmlReport:
    """Every GPU NVML reports, each probed for health; never raises."""
    if not nvml_can_answer():
        return NvmlReport((), f"no NVIDIA driver device ({', '.join(DRIVER_DEVICES)})")
    try:
        import pynvml
    except ImportError as exc:
        return NvmlReport((), f"nvidia-ml-py cannot be imported: {exc}")
    error: type[BaseException] = getattr(pynvml, "NVMLError", Exception)
    try:
        pynvml.nvmlInit()
    except error as exc:
        return NvmlReport((), f"NVML is not available: {exc}")
    try:
        count = int(pynvml.nvmlDeviceGetCount())
        return NvmlReport(tuple(_probe(pynvml, error, i) for i in range(count)))
    except error as exc:
        return NvmlReport((), f"NVML cannot count the GPUs: {exc}")
    finally:
        try:
            pynvml.nvmlShutdown()
        except error:
            pass


def _probe(nvml: Any, error: type[BaseException], index: int) -> GpuProbe:
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        nvml.nvmlDeviceGetUUID(handle)
        name = nvml.nvmlDeviceGetName(handle)
        nvml.nvmlDeviceGetMemoryInfo(handle)
    except error as exc:
        return GpuProbe(index, False, problem=str(exc) or type(exc).__name__)
    if isinstance(name, bytes):  # older nvidia-ml-py returns bytes
        name = name.decode(errors="replace")
    return GpuProbe(index, True, name=str(name))
