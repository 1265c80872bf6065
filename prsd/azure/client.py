"""``MLClient``: the v2 client's shape (``jobs``) over a spool instead of a workspace.

Guarantees: the spool is ``spool=``, else ``PRSD_SPOOL``; the Azure arguments
(credential, subscription, resource group, workspace) are accepted and kept, so a
notebook's construction line changes only by ``spool=`` (the credential is not used,
said once per process on stderr); ``MLClient.from_config()``
reads the spool from the ``config.json`` v1 reads (:mod:`prsd.azure.config`), so that
line need not change at all. ``local=True`` runs each submitted job in a background
``prsd run`` (no daemons). ``jobs`` is served, and ``compute`` as far as notebooks
look clusters up (:mod:`prsd.azure.compute`); any other operations group raises
``NotImplementedError`` naming it (docs/azure-sdk.md).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from prsd.azure.compute import ComputeOperations
from prsd.azure.config import find_config, read_config
from prsd.azure.jobs import JobOperations

DOCS = "docs/azure-sdk.md"
_SAID: set[str] = set()


def _say_once(key: str, text: str) -> None:
    """A note on stderr, once per process for each ``key``."""
    if key in _SAID:
        return
    _SAID.add(key)
    sys.stderr.write(f"prsd: note: {text}\n")
    sys.stderr.flush()


class MLClient:
    """``azure.ai.ml.MLClient`` for prsd: ``client.jobs`` submits to the spool."""

    def __init__(
        self,
        credential: Any = None,
        subscription_id: str | None = None,
        resource_group_name: str | None = None,
        workspace_name: str | None = None,
        *,
        spool: str | os.PathLike[str] | None = None,
        python: str | None = None,
        local: bool = False,
        **kwargs: Any,
    ) -> None:
        where = spool if spool is not None else os.environ.get("PRSD_SPOOL", "")
        if not where:
            raise ValueError("MLClient needs spool=... (or PRSD_SPOOL): the spool jobs go to")
        self.spool = Path(where).absolute()
        self.subscription_id = subscription_id
        self.resource_group_name = resource_group_name
        self.workspace_name = workspace_name
        self.jobs = JobOperations(self.spool, python or "", local=local)
        self.compute = ComputeOperations(self.spool)
        if credential is not None:
            _say_once(
                "credential",
                f"the credential ({type(credential).__name__}) is accepted and not used: "
                f"jobs go to the spool {self.spool}, which needs none",
            )

    @classmethod
    def from_config(
        cls,
        credential: Any = None,
        *,
        path: str | os.PathLike[str] | None = None,
        file_name: str | None = None,
        **kwargs: Any,
    ) -> MLClient:
        """A client on the spool ``config.json`` names (found where Azure's SDK looks).

        Raises:
            ConfigError: no config file, or one naming no spool (see prsd.azure.config).
        """
        found = read_config(find_config(path, file_name))
        sys.stdout.write(f"Found the config file in: {found.file}\n")  # as Azure's SDK says
        settings: dict[str, Any] = {"spool": found.spool, "local": found.local}
        if found.python:
            settings["python"] = found.python
        settings.update(kwargs)
        return cls(credential, found.subscription_id, found.resource_group_name,
                   found.workspace_name, **settings)  # fmt: skip

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise NotImplementedError(
            f"MLClient.{name} is not supported by prsd (only MLClient.jobs and .compute); see {DOCS}"
        )
