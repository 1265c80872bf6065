"""Stand-ins for ``azure.identity``'s credentials, where ``azure-identity`` is not installed.

Promise: ``DefaultAzureCredential``, ``InteractiveBrowserCredential`` and Azure's other
common credential classes accept any arguments; ``get_token`` returns an
:class:`AccessToken` with an empty token (valid an hour), so a notebook's credential
cell runs as published; prsd's ``MLClient`` takes the credential and does not use it.
The first credential made in a process says so in one note on stderr. Nothing here
reaches Azure.

Errors: none.
"""

from __future__ import annotations

import sys
import time
from typing import Any, NamedTuple

_said: list[bool] = []


class AccessToken(NamedTuple):
    """``azure.core.credentials.AccessToken``'s shape."""

    token: str
    expires_on: int


class _StandInCredential:
    """A credential prsd accepts and does not use."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if not _said:
            _said.append(True)
            sys.stderr.write(
                f"prsd: note: azure.identity.{type(self).__name__} is a stand-in "
                "(azure-identity is not installed): prsd's MLClient does not use "
                "credentials, and their tokens are empty\n"
            )
            sys.stderr.flush()

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        return AccessToken("", int(time.time()) + 3600)

    def close(self) -> None:
        return None


class DefaultAzureCredential(_StandInCredential):
    """Stand-in (see the module doc)."""


class InteractiveBrowserCredential(_StandInCredential):
    """Stand-in (see the module doc)."""


class AzureCliCredential(_StandInCredential):
    """Stand-in (see the module doc)."""


class ManagedIdentityCredential(_StandInCredential):
    """Stand-in (see the module doc)."""


class EnvironmentCredential(_StandInCredential):
    """Stand-in (see the module doc)."""


class ClientSecretCredential(_StandInCredential):
    """Stand-in (see the module doc)."""


class DeviceCodeCredential(_StandInCredential):
    """Stand-in (see the module doc)."""


class ChainedTokenCredential(_StandInCredential):
    """Stand-in (see the module doc)."""


__all__ = [
    "AccessToken",
    "AzureCliCredential",
    "ChainedTokenCredential",
    "ClientSecretCredential",
    "DefaultAzureCredential",
    "DeviceCodeCredential",
    "EnvironmentCredential",
    "InteractiveBrowserCredential",
    "ManagedIdentityCredential",
]
