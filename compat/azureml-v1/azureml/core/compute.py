"""``ComputeTarget`` / ``AmlCompute``: the fleet of agents serving the spool.

Guarantees: a compute target provisions nothing; ``create`` and ``wait_for_completion``
succeed at once with a line saying the fleet is what the agents are; ``get_status``
counts the agents whose heartbeat is fresh (as ``prsctl nodes`` does); a step's
``node_count`` caps its nodes as ``resources.instance_count`` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from azureml._prsd.unsupported import Surface, module_getattr

if TYPE_CHECKING:
    from azureml.core.workspace import Workspace


class ComputeTargetException(Exception):
    """A compute target that is not known to the workspace."""


class ProvisioningConfiguration(Surface):
    """What ``AmlCompute.provisioning_configuration`` returns (kept, not used)."""

    def __init__(self, **settings: Any) -> None:
        self.settings = settings


class ComputeStatus(Surface):
    """``target.get_status()``: the agents seen in the spool."""

    def __init__(self, nodes: int) -> None:
        self.current_node_count = nodes
        self.provisioning_state = "Succeeded"

    def serialize(self) -> dict[str, Any]:
        return {
            "currentNodeCount": self.current_node_count,
            "targetNodeCount": self.current_node_count,
            "nodeStateCounts": {"idleNodeCount": 0, "runningNodeCount": 0},
            "provisioningState": self.provisioning_state,
            "note": "the fleet is the prsd agents serving the spool",
        }


class ComputeTarget(Surface):
    """A named target; every name means the same fleet of agents."""

    type = "AmlCompute"

    def __new__(cls, workspace: Workspace | None = None, name: str | None = None) -> Any:
        if cls is ComputeTarget and workspace is not None and name is not None:
            found = workspace.compute_targets.get(name)
            if found is None:
                raise ComputeTargetException(
                    f"ComputeTargetNotFound: compute target {name!r} is not configured "
                    "(list it under prsd.compute in config.json, or create it)"
                )
            return found
        return super().__new__(cls)

    def __init__(self, workspace: Workspace, name: str) -> None:
        self.workspace = workspace
        self.name = name
        self.provisioning_state = "Succeeded"

    @staticmethod
    def create(
        workspace: Workspace, name: str, provisioning_configuration: ProvisioningConfiguration
    ) -> AmlCompute:
        target = AmlCompute(workspace, name)
        workspace._compute[name] = target
        say = f"compute target {name!r}: nothing to provision; the fleet is the prsd agents"
        print(f"{say} serving {workspace.spool}")
        return target

    def wait_for_completion(
        self,
        show_output: bool = False,
        min_node_count: int | None = None,
        timeout_in_minutes: int = 20,
        is_delete_operation: bool = False,
    ) -> None:
        if show_output:
            print("Succeeded")
            print(
                f"AmlCompute wait for completion finished: the fleet serving {self.workspace.spool}"
            )

    def get_status(self) -> ComputeStatus:
        """The agents whose heartbeat is fresh (as ``prsctl nodes`` counts them)."""
        from datetime import UTC, datetime
        from pathlib import Path

        from prsd.read.fleet import read_fleet
        from prsd.spool.layout import SpoolLayout

        fleet = read_fleet(SpoolLayout(Path(self.workspace.spool)), datetime.now(UTC))
        return ComputeStatus(fleet.agents_alive)

    def delete(self) -> None:
        self.workspace._compute.pop(self.name, None)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(workspace={self.workspace.name!r}, name={self.name!r})"


class AmlCompute(ComputeTarget):
    """Azure's managed cluster; here the fleet."""

    @staticmethod
    def provisioning_configuration(
        vm_size: str = "",
        vm_priority: str = "dedicated",
        min_nodes: int = 0,
        max_nodes: int | None = None,
        idle_seconds_before_scaledown: int | None = None,
        admin_username: str | None = None,
        admin_user_password: str | None = None,
        admin_user_ssh_key: str | None = None,
        vnet_resourcegroup_name: str | None = None,
        vnet_name: str | None = None,
        subnet_name: str | None = None,
        tags: dict[str, str] | None = None,
        description: str | None = None,
        remote_login_port_public_access: str = "NotSpecified",
        identity_type: str | None = None,
        identity_id: list[str] | None = None,
        location: str | None = None,
        enable_node_public_ip: bool = True,
    ) -> ProvisioningConfiguration:
        return ProvisioningConfiguration(vm_size=vm_size, min_nodes=min_nodes, max_nodes=max_nodes)


__getattr__ = module_getattr("azureml.core.compute")
