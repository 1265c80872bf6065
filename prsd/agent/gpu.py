"""GPU discovery and slots (Azure's rule, docs/supervision.md "GPUs and slots").

With G GPUs and P workers, workers take GPU indices 0..G-1 while any is free; a
worker that dies frees its index and the next started worker takes the lowest free
one; with P > G the extra workers get no ``CUDA_VISIBLE_DEVICES``.

Discovery: ``PRSD_GPU_COUNT`` (tests, machines without NVML) beats NVML. A GPU whose
NVML probe fails is left out of the slots and named in every job's ``_main.txt``;
the usable GPUs keep their NVML indices, so the count can be smaller than the
highest index + 1 (GPUs 0, 2, 3 when GPU 1 is lost).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prsd.agent.nvml import GpuProbe, NvmlReport, probe_gpus
from prsd.errors import PrsdError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

GPU_COUNT_VARIABLE = "PRSD_GPU_COUNT"


@dataclass(frozen=True)
class GpuInventory:
    """The GPUs this node hands to workers, and the ones it refuses."""

    usable: tuple[int, ...] = ()
    unhealthy: tuple[GpuProbe, ...] = ()
    source: str = "none"

    @property
    def count(self) -> int:
        """Usable GPUs: the node's GPU count for workers and the default worker count."""
        return len(self.usable)

    def log_lines(self) -> list[str]:
        """What ``_main.txt`` says about the GPUs (one line, plus one per unhealthy GPU)."""
        indices = ",".join(str(i) for i in self.usable) or "none"
        lines = [f"GPUs: {self.count} usable ({indices}), found by {self.source}"]
        lines += [
            f"GPU {g.index} is unhealthy and is not handed to workers: {g.problem}"
            for g in self.unhealthy
        ]
        return lines


def inventory(override: str | None, nvml: Callable[[], NvmlReport]) -> GpuInventory:
    """Decide the GPUs from the ``PRSD_GPU_COUNT`` text (or None) and an NVML probe.

    Raises:
        PrsdError: ``PRSD_GPU_COUNT`` is not a whole number >= 0.
    """
    text = (override or "").strip()
    if text:
        try:
            count = int(text)
        except ValueError:
            count = -1
        if count < 0:
            raise PrsdError(f"{GPU_COUNT_VARIABLE}={text!r}: expected a whole number >= 0")
        return GpuInventory(tuple(range(count)), source=GPU_COUNT_VARIABLE)
    report = nvml()
    if report.unavailable:
        return GpuInventory(source=f"NVML ({report.unavailable})")
    usable = tuple(g.index for g in report.gpus if g.healthy)
    unhealthy = tuple(g for g in report.gpus if not g.healthy)
    return GpuInventory(usable, unhealthy, source="NVML")


def discover_gpus(environ: Mapping[str, str] | None = None) -> GpuInventory:
    """This node's GPUs: ``PRSD_GPU_COUNT`` if set, else NVML (none if NVML fails).

    Raises:
        PrsdError: ``PRSD_GPU_COUNT`` is set to something that is not a count.
    """
    env = os.environ if environ is None else environ
    return inventory(env.get(GPU_COUNT_VARIABLE), probe_gpus)


class GpuSlots:
    """Which GPU index each worker holds; shared by every job on the node."""

    def __init__(self, count: int = 0, *, gpus: GpuInventory | None = None) -> None:
        self.inventory = gpus if gpus is not None else GpuInventory(tuple(range(count)))
        self.held: set[int] = set()

    @classmethod
    def for_node(cls, gpu_count: int | None) -> GpuSlots:
        """``gpu_count`` GPUs if given (the agent's option), else discovered ones."""
        if gpu_count is not None:
            return cls(gpu_count)
        return cls(gpus=discover_gpus())

    @property
    def count(self) -> int:
        return self.inventory.count

    def acquire(self) -> int | None:
        """The lowest free GPU index, or None when all are held (or there are none)."""
        for i in self.inventory.usable:
            if i not in self.held:
                self.held.add(i)
                return i
        return None

    def release(self, index: int | None) -> None:
        if index is not None:
            self.held.discard(index)
