"""``azureml`` as prsd's workers provide it: only ``azureml.core``, offline.

Other ``azureml.*`` packages installed in the job's environment (a namespace
package elsewhere on ``sys.path``) stay importable: this package's path is extended
with theirs.
"""

from __future__ import annotations

from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)
