from __future__ import annotations


def init() -> None:
    pass


def run(mini_batch: list[str]) -> list[str]:
    return [open(path).read().strip() for path in mini_batch]
