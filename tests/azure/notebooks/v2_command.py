# A v2 notebook submitting a lone command job (no pipeline). argv: the spool. Run from
# a folder holding v2src/ and raw/.
import sys

from azure.ai.ml import Input, Output, command

from prsd.azure import MLClient

ml_client = MLClient(spool=sys.argv[1])

job = command(
    code="./v2src",
    command="python prep.py --raw ${{inputs.raw}} --copies 3 --out ${{outputs.copies}}",
    inputs=dict(raw=Input(type="uri_folder", path="./raw")),
    outputs=dict(copies=Output(type="uri_folder")),
    environment="azureml:AzureML-sklearn-1.0-ubuntu20.04-py38-cpu@latest",
    experiment_name="lone-command",
)
job = ml_client.jobs.create_or_update(job)
ml_client.jobs.stream(job.name)
ml_client.jobs.download(job.name, output_name="copies", download_path="./results")
print("status", ml_client.jobs.get(job.name).status)
