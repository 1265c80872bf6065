"""The order of a pipeline's steps: dependencies, cycles, and what a failure skips (pure).

Guarantees: :func:`order` lists every step after the steps it reads from, or raises
naming a cycle; :func:`downstream` is every step that reads, directly or not, from the
given ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping


class CycleError(ValueError):
    """The steps depend on each other in a circle (``path`` lists it, first step last)."""

    def __init__(self, path: list[str]) -> None:
        self.path = path
        super().__init__(" -> ".join(path))


def order(deps: Mapping[str, Iterable[str]]) -> list[str]:
    """The steps in an order where each comes after its dependencies (ties: as written).

    Raises:
        CycleError: a cycle, listed from its first step back to it.
    """
    done: list[str] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: placed

    def visit(step: str, path: list[str]) -> None:
        if state.get(step) == 2:
            return
        if state.get(step) == 1:
            raise CycleError([*path[path.index(step) :], step])
        state[step] = 1
        for dep in deps.get(step, ()):
            visit(dep, [*path, step])
        state[step] = 2
        done.append(step)

    for step in deps:
        visit(step, [])
    return done


def downstream(deps: Mapping[str, Iterable[str]], roots: Iterable[str]) -> set[str]:
    """Every step that depends, directly or through others, on one of ``roots``."""
    users: dict[str, set[str]] = {}
    for step, needs in deps.items():
        for dep in needs:
            users.setdefault(dep, set()).add(step)
    found: set[str] = set()
    todo = list(roots)
    while todo:
        for user in users.get(todo.pop(), ()):
            if user not in found:
                found.add(user)
                todo.append(user)
    return found
