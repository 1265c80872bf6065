"""``Workspace``: a spool and its datastore folders, read from ``config.json``.

Guarantees: ``Workspace.from_config()`` reads the file Azure's SDK reads (see
:mod:`azureml._prsd.config`); ``datastores`` holds the default datastore and every
configured one; ``compute_targets`` holds one target per configured name (the fleet of
agents). Nothing here starts, stops or provisions anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from azureml._prsd.config import Settings, find_config, read_settings
from azureml._prsd.unsupported import Surface

if TYPE_CHECKING:
    import os

    from azureml.core.compute import ComputeTarget
    from azureml.core.datastore import Datastore


class Workspace(Surface):
    """Azure's ``Workspace``; its service is the spool in ``config.json`` (or ``PRSD_SPOOL``)."""

    def __init__(
        self,
        subscription_id: str,
        resource_group: str,
        workspace_name: str,
        auth: Any = None,
        _location: str | None = None,
        _disable_service_check: bool = False,
        _workspace_id: str | None = None,
        sku: str = "basic",
        tags: dict[str, str] | None = None,
        _cloud: str = "AzureCloud",
        *,
        _settings: Settings | None = None,
    ) -> None:
        settings = _settings or read_settings(None)
        self._settings = settings
        self.subscription_id = subscription_id
        self.resource_group = resource_group
        self.name = workspace_name
        self.location = _location or settings.location
        self.tags = dict(tags or {})
        self.sku = sku
        self._default = settings.default_datastore
        self._compute: dict[str, ComputeTarget] = {}

    @staticmethod
    def from_config(
        path: str | os.PathLike[str] | None = None,
        auth: Any = None,
        _logger: Any = None,
        _file_name: str | None = None,
    ) -> Workspace:
        """The workspace of ``config.json`` (here or above, or at ``path``)."""
        file = find_config(path, _file_name)
        s = read_settings(file)
        print(f"Found the config file in: {file}")
        return Workspace(s.subscription_id, s.resource_group, s.name, auth, _settings=s)

    @staticmethod
    def get(
        name: str,
        auth: Any = None,
        subscription_id: str | None = None,
        resource_group: str | None = None,
        location: str | None = None,
        cloud: str = "AzureCloud",
        id: str | None = None,
    ) -> Workspace:
        """The workspace of ``PRSD_SPOOL`` under the given name."""
        return Workspace(subscription_id or "", resource_group or "", name, auth, location)

    @property
    def spool(self) -> str:
        """The spool folder this workspace submits to (a prsd addition)."""
        return str(self._settings.spool)

    @property
    def datastores(self) -> dict[str, Datastore]:
        """The default datastore and every configured one, by name."""
        from azureml.core.datastore import Datastore

        names = {self._default, *self._settings.datastores}
        return {n: Datastore(self, n) for n in sorted(names)}

    def get_default_datastore(self) -> Datastore:
        """The default datastore (``workspaceblobstore`` unless configured)."""
        from azureml.core.datastore import Datastore

        return Datastore(self, self._default)

    def set_default_datastore(self, name: str) -> None:
        """Make ``name`` the default datastore of this workspace object."""
        if name not in self.datastores:
            raise ValueError(f"no datastore {name!r}; known: {', '.join(self.datastores)}")
        self._default = name

    @property
    def compute_targets(self) -> dict[str, ComputeTarget]:
        """One target per configured name (``prsd.compute``) and per target made here."""
        from azureml.core.compute import AmlCompute

        found: dict[str, ComputeTarget] = {n: AmlCompute(self, n) for n in self._settings.compute}
        found.update(self._compute)
        return found

    def get_details(self) -> dict[str, Any]:
        """Azure's detail keys that mean something here."""
        return {
            "name": self.name,
            "location": self.location,
            "subscriptionId": self.subscription_id,
            "resourceGroup": self.resource_group,
            "spool": self.spool,
            "defaultDatastore": self._default,
        }

    def __repr__(self) -> str:
        return f"Workspace.create(name='{self.name}', spool='{self.spool}')"
