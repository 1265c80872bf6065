"""Azure ML SDK v2 notebooks as published, on a prsd spool.

Installed beside Azure's own ``azure-ai-ml``, this distribution makes
``from azure.ai.ml import MLClient`` give prsd's client (:mod:`prsd_azure_ai_ml.client`,
over :class:`prsd.azure.MLClient`), so a v2 notebook's import cell runs unchanged; every
other ``azure.ai.ml`` name (``Input``, ``Output``, ``load_component``, ``dsl.pipeline``,
``entities``, ``constants``, ``parallel``) stays the SDK's own, and prsd submits the
SDK's own job objects. ``azure.identity``'s credentials are accepted and not used (said
once); where ``azure-identity`` is not installed, stand-ins of its credential classes
are importable (:mod:`prsd_azure_ai_ml.identity`). The hook that does this is
:mod:`prsd_azure_ai_ml.hook`, put in place by the ``prsd_azure_ai_ml.pth`` file at
interpreter start; it imports nothing until ``azure.ai.ml`` is imported.
"""
