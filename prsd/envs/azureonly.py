"""Azure's own SDK packages, which a prsd worker never needs; pure.

Invariant: :func:`is_azure_only` is the one test, shared by the YAML conda files of
jobs (:mod:`prsd.envs.spec` leaves these packages out and says so) and the v1 SDK
layer's ``CondaDependencies`` (compat/azureml-v1): ``azureml``, ``azureml-*`` and
``azureml_*`` requirements, with any extras, versions or marker. Workers import
prsd's offline ``azureml.core`` (``azureml_user/compat``) instead, and the packages
often pin old versions (``azureml-dataset-runtime[fuse]`` pulls in ``fusepy``, which
has no wheels) or talk to Azure's service.

Errors: none; any text is a requirement or not.
"""

from __future__ import annotations

import re

AZURE_ONLY_PREFIXES = ("azureml-", "azureml_")
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def is_azure_only(requirement: str) -> bool:
    """``azureml-defaults``, ``azureml-dataset-runtime[fuse]==1.60``, ``azureml``: yes."""
    m = _NAME.match(requirement)
    if not m:
        return False
    name = m.group(1).lower()
    return name == "azureml" or name.startswith(AZURE_ONLY_PREFIXES)
