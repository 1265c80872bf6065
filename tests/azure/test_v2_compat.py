"""compat/azure-ai-ml: a v2 notebook's import and credential cells as Azure publishes them
(``from azure.ai.ml import MLClient, ...``, ``from azure.identity import ...``) run
unchanged; ``MLClient`` is prsd's, every other name the SDK's own, and what prsd does
differently is said once (real interpreters, real installed packages, no daemons)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

COMPAT = Path(__file__).resolve().parents[2] / "compat" / "azure-ai-ml"

# The first three cells of Azure's sdk/python/jobs/parallel/3a_mnist_batch_identification
# and 1g_pipeline_with_parallel_nodes notebooks, as published.
CELLS = """
# import required libraries
from azure.identity import DefaultAzureCredential, InteractiveBrowserCredential
from azure.ai.ml import MLClient, Input, Output, load_component
from azure.ai.ml.dsl import pipeline
from azure.ai.ml.entities import Environment, ResourceConfiguration
from azure.ai.ml.constants import AssetTypes, InputOutputModes
from azure.ai.ml.parallel import parallel_run_function, RunFunction

try:
    credential = DefaultAzureCredential()
    # Check if given credential can get token successfully.
    credential.get_token("https://management.azure.com/.default")
except Exception as ex:
    # Fall back to InteractiveBrowserCredential in case DefaultAzureCredential not work
    credential = InteractiveBrowserCredential()

# Get a handle to workspace
ml_client = MLClient.from_config(credential=credential)

# Retrieve an already attached Azure Machine Learning Compute.
cpu_compute_target = "cpu-cluster"
print(ml_client.compute.get(cpu_compute_target))
"""

AFTER = """
import azure.ai.ml, azure.identity
print("client", type(ml_client).__module__, type(ml_client).__mro__[1].__module__)
print("spool", ml_client.spool)
print("input", Input.__module__, "pipeline", pipeline.__module__)
print("identity", azure.identity.__name__, getattr(azure.identity, "__file__", ""))
print("again", type(MLClient.from_config(credential=credential)).__name__)
"""


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    config = {"subscription_id": "0000", "resource_group": "rg", "workspace_name": "ws"}
    config["prsd"] = {"spool": str(tmp_path / "spool")}  # type: ignore[assignment]
    (ws / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return ws


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PRSD_SPOOL", "PYTHONPATH")}


def test_the_published_cells_run_and_say_once_what_prsd_does(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-c", CELLS + AFTER],
        cwd=ws, capture_output=True, text=True, timeout=120, env=_env(), check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert f"Found the config file in: {ws / 'config.json'}" in out
    assert "client prsd_azure_ai_ml.client prsd.azure.client" in out
    assert f"spool {tmp_path / 'spool'}" in out
    assert "input azure.ai.ml.entities._inputs_outputs.input" in out, out
    assert "pipeline azure.ai.ml.dsl._pipeline_decorator" in out, out
    assert "identity azure.identity " in out and "site-packages/azure/identity" in out, out
    assert "again MLClient" in out
    notes = [ln for ln in proc.stderr.splitlines() if ln.startswith("prsd: note: ")]
    assert notes == [
        (
            "prsd: note: the credential (InteractiveBrowserCredential) is accepted and not used: "
            f"jobs go to the spool {tmp_path / 'spool'}, which needs none"
        ),
        (
            "prsd: note: azure.ai.ml.MLClient is prsd's (prsd-azure-ai-ml): jobs go to the spool "
            f"{tmp_path / 'spool'}, not to Azure (workspace ws); only .jobs and .compute are served"
        ),
    ], proc.stderr


def test_identity_stand_ins_where_azure_identity_is_not_installed(tmp_path: Path) -> None:
    """Without site-packages (``-S``): only the compat package and an ``azure`` namespace."""
    ns = tmp_path / "ns"
    (ns / "azure").mkdir(parents=True)
    script = textwrap.dedent("""
        import prsd_azure_ai_ml.hook
        prsd_azure_ai_ml.hook.install()
        from azure.identity import DefaultAzureCredential, InteractiveBrowserCredential
        credential = DefaultAzureCredential()
        token = credential.get_token("https://management.azure.com/.default")
        InteractiveBrowserCredential()
        import azure.identity
        print(azure.identity.__name__, type(credential).__module__, repr(token.token))
    """)
    env = {**_env(), "PYTHONPATH": f"{COMPAT}:{ns}"}
    proc = subprocess.run(
        [sys.executable, "-S", "-c", script],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.split() == ["prsd_azure_ai_ml.identity", "prsd_azure_ai_ml.identity", "''"]
    assert proc.stderr == (
        "prsd: note: azure.identity.DefaultAzureCredential is a stand-in (azure-identity is not "
        "installed): prsd's MLClient does not use credentials, and their tokens are empty\n"
    )


def test_the_hook_is_installed_by_the_distribution() -> None:
    """pip installed the .pth beside the package: a fresh interpreter has the finder."""
    code = "import sys; print([type(f).__module__ for f in sys.meta_path][0])"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.stdout.strip() == "prsd_azure_ai_ml.hook", proc.stdout + proc.stderr


def test_loading_the_hook_imports_nothing_but_itself() -> None:
    """The .pth file loads the hook at every interpreter start of the environment: it
    imports no module of its own until one of its two names is asked for (it imported
    ``importlib.abc``, hence ``importlib.resources`` and ``tempfile``, 14 ms a start)."""
    script = textwrap.dedent("""
        import __future__, os, sys  # what a start with site has, and the annotations flag
        before = set(sys.modules)
        import prsd_azure_ai_ml.hook
        prsd_azure_ai_ml.hook.install()
        print(" ".join(sorted(set(sys.modules) - before)))
    """)
    env = {**_env(), "PYTHONPATH": str(COMPAT)}
    proc = subprocess.run(
        [sys.executable, "-S", "-c", script],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.split() == ["prsd_azure_ai_ml", "prsd_azure_ai_ml.hook"]


def test_without_prsd_the_import_fails_whole_naming_what_to_install(tmp_path: Path) -> None:
    """Azure's real SDK on the path (``-S``: no .pth files, so no prsd), and the hook."""
    import importlib.util

    spec = importlib.util.find_spec("azure.ai.ml")  # found, not imported
    assert spec is not None and spec.origin is not None
    site = Path(spec.origin).parents[3]  # .../site-packages
    script = textwrap.dedent("""
        import sys
        import prsd_azure_ai_ml.hook
        prsd_azure_ai_ml.hook.install()
        try:
            import azure.ai.ml
        except ImportError as exc:
            print("refused:", exc)
        print("left:", "azure.ai.ml" in sys.modules)
    """)
    env = {**_env(), "PYTHONPATH": f"{COMPAT}:{site}"}
    proc = subprocess.run(
        [sys.executable, "-S", "-c", script],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (
        "refused: prsd-azure-ai-ml maps azure.ai.ml.MLClient onto prsd, which cannot be imported "
        "here (No module named 'prsd'); install prsd in this environment"
    ) in proc.stdout, proc.stdout + proc.stderr
    assert "left: False" in proc.stdout
