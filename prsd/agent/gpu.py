"""GPU discovery and slots (SPEC section 6, Azure's rule).

With G GPUs and P workers, workers take GPU indices 0..G-1 while any is free; a
worker that dies frees its index and the next started worker takes the lowest free
one; with P > G the extra workers get no ``CUDA_VISIBLE_DEVICES``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field


def discover_gpu_count() -> int:
    """GPUs on this node: ``PRSD_GPU_COUNT`` if set, else NVML, else 0."""
    override = os.environ.get("PRSD_GPU_COUNT", "").strip()
    if override:
        return max(int(override), 0)
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetCount())
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - any NVML failure means "no usable GPUs"
        return 0


@dataclass
class GpuSlots:
    """Which GPU index each worker holds."""

    count: int
    held: set[int] = field(default_factory=set)

    def acquire(self) -> int | None:
        """The lowest free GPU index, or None when all are held (or there are none)."""
        for i in range(self.count):
            if i not in self.held:
                self.held.add(i)
                return i
        return None

    def release(self, index: int | None) -> None:
        if index is not None:
            self.held.discard(index)
