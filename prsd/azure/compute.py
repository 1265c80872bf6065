"""``client.compute``: Azure's compute clusters, which on prsd are the fleet of agents.

Guarantees: ``get(name)`` returns a compute of that name (any name: every one is the
whole fleet of agents serving the spool), ``list()`` the names the client was told
of, and ``begin_create_or_update(compute)`` provisions nothing and returns a poller
whose ``result()`` is the compute, so the notebook cells that look up or create a
cluster run as published. Nothing here reads or writes the spool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


class FleetCompute:
    """A compute target of ``name``: the agents serving the spool."""

    def __init__(self, name: str, spool: Path) -> None:
        self.name = name
        self.type = "amlcompute"
        self.provisioning_state = "Succeeded"
        self.spool = spool

    def __repr__(self) -> str:
        return (
            f"AmlCompute(name={self.name!r}): on prsd, the agents serving {self.spool} "
            "(nothing is provisioned)"
        )


class _Done:
    """A long-running operation that has already finished (Azure's poller's shape)."""

    def __init__(self, value: Any) -> None:
        self._value = value

    def result(self, timeout: float | None = None) -> Any:
        return self._value

    def wait(self, timeout: float | None = None) -> None:
        return None

    def done(self) -> bool:
        return True


class ComputeOperations:
    """The ``compute`` operations of :class:`prsd.azure.MLClient`."""

    def __init__(self, spool: Path) -> None:
        self.spool = spool
        self._names: list[str] = []

    def get(self, name: str) -> FleetCompute:
        """The compute ``name`` (every name is the fleet)."""
        if name not in self._names:
            self._names.append(name)
        return FleetCompute(name, self.spool)

    def list(self, **kwargs: Any) -> Iterator[FleetCompute]:
        """The computes asked for or created through this client."""
        return iter([FleetCompute(n, self.spool) for n in self._names])

    def begin_create_or_update(self, compute: Any, **kwargs: Any) -> _Done:
        """Nothing to provision: the compute, at once."""
        return _Done(self.get(str(getattr(compute, "name", compute))))
