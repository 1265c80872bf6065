"""prsd.azure's pure parts: the SDK mapping made ready for a file elsewhere; the client's refusals."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
import yaml

from prsd.azure import MLClient
from prsd.azure.sdkyaml import for_prsd, local_path, pipeline_mapping

if TYPE_CHECKING:
    from pathlib import Path


def test_local_paths_become_absolute_and_references_stay(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    assert local_path("azureml:./data", tmp_path) == str(tmp_path / "data")
    assert local_path("data", tmp_path) == str(tmp_path / "data")
    assert local_path("file:../x", tmp_path) == str(tmp_path.parent / "x")
    assert local_path("${{parent.inputs.raw}}", tmp_path) is None
    assert local_path("azureml://datastores/ws/paths/x", tmp_path) is None
    assert local_path("azureml:my-data:3", tmp_path) is None


def test_inline_components_are_written_beside_the_pipeline(tmp_path: Path) -> None:
    sdk = {
        "type": "pipeline",
        "display_name": None,
        "inputs": {"raw": {"type": "uri_folder", "path": "azureml:./raw"}},
        "jobs": {"s": {"type": "parallel", "inputs": {"x": {"path": "./x"}, "k": 3},
                       "component": {"type": "parallel", "name": "s"}}},
    }  # fmt: skip
    out = for_prsd(sdk, tmp_path, tmp_path)
    assert "display_name" not in out
    assert out["inputs"]["raw"]["path"] == str(tmp_path / "raw")
    step = out["jobs"]["s"]
    assert step["inputs"] == {"x": {"path": str(tmp_path / "x")}, "k": 3}
    assert step["component"] == "./components/s.yml"
    assert yaml.safe_load((tmp_path / "components" / "s.yml").read_text()) == {
        "type": "parallel",
        "name": "s",
    }


def test_a_lone_job_is_a_one_step_pipeline() -> None:
    lone = {"type": "parallel", "name": "x", "input_data": "./d"}
    assert pipeline_mapping(lone, "my job") == {
        "type": "pipeline", "name": "my job", "jobs": {"my_job": {"type": "parallel", "input_data": "./d"}},
    }  # fmt: skip


def test_the_client_serves_jobs_and_compute_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = MLClient("credential", "sub", "rg", "ws", spool=tmp_path)
    assert client.spool == tmp_path and client.workspace_name == "ws"
    cluster = client.compute.get("cpu-cluster")  # every name is the fleet
    assert (cluster.name, cluster.provisioning_state) == ("cpu-cluster", "Succeeded")
    assert client.compute.begin_create_or_update(cluster).result().name == "cpu-cluster"
    assert [c.name for c in client.compute.list()] == ["cpu-cluster"]
    with pytest.raises(
        NotImplementedError, match=r"MLClient.data is not supported by prsd.*docs/azure-sdk.md"
    ):
        _ = client.data
    monkeypatch.delenv("PRSD_SPOOL", raising=False)
    with pytest.raises(ValueError, match=r"needs spool=\.\.\. \(or PRSD_SPOOL\)"):
        MLClient()
