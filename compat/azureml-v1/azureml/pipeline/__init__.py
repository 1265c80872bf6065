"""``azureml.pipeline``: Pipeline, PipelineData, ParallelRunStep and friends on prsd."""

from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)
