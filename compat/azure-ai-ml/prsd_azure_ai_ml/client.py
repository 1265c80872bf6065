"""``azure.ai.ml.MLClient`` as prsd's client, saying so once.

Promise: :class:`MLClient` is :class:`prsd.azure.MLClient` (``MLClient.from_config``,
``MLClient(credential, subscription_id, resource_group_name, workspace_name, spool=...)``,
``.jobs``, ``.compute``); the first client made in a process writes one note on stderr
that jobs go to a prsd spool, not to the Azure workspace named. What prsd's client
does not serve raises ``NotImplementedError`` naming it (docs/azure-sdk.md).

Errors: those of :class:`prsd.azure.MLClient` (no spool named: ``ValueError``).
"""

from __future__ import annotations

import sys
from typing import Any

from prsd.azure import MLClient as PrsdClient

_said: list[bool] = []


class MLClient(PrsdClient):
    """``from azure.ai.ml import MLClient`` with prsd-azure-ai-ml installed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not _said:
            _said.append(True)
            workspace = f" (workspace {self.workspace_name})" if self.workspace_name else ""
            sys.stderr.write(
                f"prsd: note: azure.ai.ml.MLClient is prsd's (prsd-azure-ai-ml): jobs go to "
                f"the spool {self.spool}, not to Azure{workspace}; only .jobs and .compute "
                "are served\n"
            )
            sys.stderr.flush()
