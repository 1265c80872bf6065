"""Azure's own SDK packages, which a prsd worker never needs; pure.

Invariant: :func:`is_azure_only` is the one test, shared by the YAML conda files of
jobs (:mod:`prsd.envs.spec` leaves these packages out and says so) and the v1 SDK
layer's ``CondaDependencies`` (compat/azureml-v1): ``azureml``, ``azureml-*`` and
``azureml_*`` requirements, with any extras, versions or marker. Workers import
prsd's offline ``azureml.core`` (``azureml_user/compat``) instead, and the packages
often pin old versions (``azureml-dataset-runtime[fuse]`` pulls in ``fusepy``, which
has no wheels) or talk to Azure's service.

Leaving a package out also drops the pins it would have put on the packages a job does
install; :func:`constraints_of` keeps those that change what a published script gets
(``azureml-dataset-runtime[pandas]`` holds ``pandas<2.0.0``: Azure's published iris
scoring script assigns a 2-D column, which pandas 2 refuses). They are constraints,
never installs: a job that does not install pandas gets none.

Errors: none; any text is a requirement or not.
"""

from __future__ import annotations

import re

AZURE_ONLY_PREFIXES = ("azureml-", "azureml_")
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?")
# (package, extra): the pins it puts on other packages, from its published metadata
# (azureml-dataset-runtime 1.62: ``pandas<2.0.0,>=0.23.4; extra == "pandas"``).
PINS_KEPT = {
    ("azureml-dataset-runtime", "pandas"): ("pandas<2.0.0", "numpy<2.0.0"),
}


def is_azure_only(requirement: str) -> bool:
    """``azureml-defaults``, ``azureml-dataset-runtime[fuse]==1.60``, ``azureml``: yes."""
    m = _NAME.match(requirement)
    if not m:
        return False
    name = m.group(1).lower()
    return name == "azureml" or name.startswith(AZURE_ONLY_PREFIXES)


def constraints_of(requirement: str) -> tuple[str, ...]:
    """The pins a left-out Azure package puts on others (see the module doc); () if none."""
    m = _NAME.match(requirement)
    if not m:
        return ()
    name = m.group(1).lower().replace("_", "-")
    extras = [e.strip().lower() for e in (m.group(2) or "").split(",") if e.strip()]
    return tuple(pin for extra in extras for pin in PINS_KEPT.get((name, extra), ()))
