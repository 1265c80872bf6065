"""W-GPU: one model step per item on the GPU (torch), the same in prsd and the tight loop."""

import os

STEPS = int(os.environ.get("BENCH_GPU_STEPS", "20"))
SIZE = int(os.environ.get("BENCH_GPU_SIZE", "4096"))
_state = {}


def init():
    import torch

    _state["torch"] = torch
    _state["a"] = torch.randn(SIZE, SIZE, device="cuda")


def step():
    torch, a = _state["torch"], _state["a"]
    for _ in range(STEPS):
        a = torch.tanh(a @ a / SIZE)
    torch.cuda.synchronize()


def run(mini_batch):
    out = []
    for item in mini_batch:
        step()
        out.append(os.path.basename(item))
    return out
