"""``azureml`` as prsd's v1 layer provides it; other ``azureml.*`` distributions stay importable."""

from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)
