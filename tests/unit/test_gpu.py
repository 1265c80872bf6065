"""GPU discovery (PRSD_GPU_COUNT, a fake NVML at the edge) and slot assignment (Azure's rule)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import pytest

from prsd.agent import nvml
from prsd.agent.gpu import GpuInventory, GpuSlots, discover_gpus, inventory
from prsd.agent.nvml import GpuProbe, NvmlReport, probe_gpus
from prsd.errors import PrsdError
from tests import fake_pynvml

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path


def _nvml(*gpus: GpuProbe, unavailable: str = "") -> Callable[[], NvmlReport]:
    return lambda: NvmlReport(tuple(gpus), unavailable)


def _fail_if_called() -> NvmlReport:
    raise AssertionError("NVML must not be asked when PRSD_GPU_COUNT is set")


def test_override_beats_nvml() -> None:
    """PRSD_GPU_COUNT decides alone; NVML is not asked."""
    inv = inventory(" 2 ", _fail_if_called)
    assert inv.usable == (0, 1) and inv.count == 2 and inv.source == "PRSD_GPU_COUNT"
    assert inventory("0", _fail_if_called).count == 0


@pytest.mark.parametrize("text", ["-1", "two", "1.5"])
def test_bad_override_is_a_clear_error(text: str) -> None:
    """A PRSD_GPU_COUNT that is not a count is refused, naming the variable."""
    with pytest.raises(PrsdError, match="PRSD_GPU_COUNT"):
        inventory(text, _fail_if_called)


def test_unhealthy_gpu_is_left_out_and_named() -> None:
    """A GPU whose NVML probe failed is not usable; the log lines say which and why."""
    inv = inventory(
        None,
        _nvml(GpuProbe(0, True), GpuProbe(1, False, problem="GPU is lost"), GpuProbe(2, True)),
    )
    assert inv.usable == (0, 2) and inv.count == 2
    lines = inv.log_lines()
    assert lines[0] == "GPUs: 2 usable (0,2), found by NVML"
    assert lines[1] == "GPU 1 is unhealthy and is not handed to workers: GPU is lost"


def test_no_nvml_means_no_gpus() -> None:
    """NVML missing or failing: zero GPUs, and the reason kept for the log."""
    inv = inventory(None, _nvml(unavailable="NVML is not available: Driver Not Loaded"))
    assert inv.count == 0 and "Driver Not Loaded" in inv.log_lines()[0]


def test_slots_p_greater_than_g_and_reuse_of_a_dead_workers_index() -> None:
    """Four workers on two GPUs: 0, 1, then none; a freed index goes to the next worker."""
    slots = GpuSlots(2)
    assert [slots.acquire() for _ in range(4)] == [0, 1, None, None]
    slots.release(1)
    slots.release(None)
    assert slots.acquire() == 1
    assert slots.acquire() is None
    slots.release(0)
    slots.release(1)
    assert [slots.acquire(), slots.acquire()] == [0, 1], "the lowest free index first"


def test_slots_keep_nvml_indices_around_an_unhealthy_gpu() -> None:
    """With GPU 1 lost, workers get 0 and 2, never 1."""
    slots = GpuSlots(gpus=GpuInventory((0, 2, 3), (GpuProbe(1, False, problem="lost"),)))
    assert [slots.acquire() for _ in range(4)] == [0, 2, 3, None]
    assert slots.count == 3


@pytest.fixture
def fake_nvml(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """The fake pynvml module in place of nvidia-ml-py."""
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml)
    monkeypatch.delenv("PRSD_GPU_COUNT", raising=False)
    monkeypatch.setenv("PRSD_NVML_ALWAYS", "1")  # the fake stands for a driver: ask it
    return monkeypatch


def test_probe_through_the_nvml_edge(fake_nvml: pytest.MonkeyPatch) -> None:
    """The NVML edge counts GPUs and marks the one whose queries fail."""
    fake_nvml.setenv("FAKE_NVML_GPUS", "4")
    fake_nvml.setenv("FAKE_NVML_UNHEALTHY", "2")
    report = probe_gpus()
    assert [g.healthy for g in report.gpus] == [True, True, False, True]
    assert report.gpus[2].problem == "GPU is lost"
    assert report.gpus[0].name == "Fake GPU"
    assert discover_gpus().usable == (0, 1, 3)


def test_nvml_is_not_asked_without_a_driver_device(
    fake_nvml: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No driver device, no NVML (and no pynvml import); the device there, NVML answers."""
    fake_nvml.delenv("PRSD_NVML_ALWAYS")
    fake_nvml.setenv("FAKE_NVML_GPUS", "2")
    device = tmp_path / "nvidiactl"
    fake_nvml.setattr(nvml, "DRIVER_DEVICES", (str(device),))
    report = probe_gpus()
    assert report.gpus == () and f"no NVIDIA driver device ({device})" == report.unavailable
    assert discover_gpus().source == f"NVML (no NVIDIA driver device ({device}))"
    device.touch()
    assert [g.healthy for g in probe_gpus().gpus] == [True, True]
    device.unlink()
    fake_nvml.setenv("PRSD_NVML_ALWAYS", "1")
    assert discover_gpus().usable == (0, 1)


def test_nvml_init_failure_means_no_gpus(fake_nvml: pytest.MonkeyPatch) -> None:
    """nvmlInit failing (no driver) is zero GPUs, never an exception."""
    fake_nvml.setenv("FAKE_NVML_GPUS", "2")
    fake_nvml.setenv("FAKE_NVML_INIT_ERROR", "Driver Not Loaded")
    report = probe_gpus()
    assert report.gpus == () and "Driver Not Loaded" in report.unavailable
    assert GpuSlots.for_node(None).count == 0
    assert GpuSlots.for_node(3).count == 3, "the agent's option beats discovery"


def test_override_from_the_environment(fake_nvml: pytest.MonkeyPatch) -> None:
    """PRSD_GPU_COUNT in the environment beats what NVML reports."""
    fake_nvml.setenv("FAKE_NVML_GPUS", "8")
    fake_nvml.setenv("PRSD_GPU_COUNT", "2")
    assert discover_gpus().usable == (0, 1)
