# A v2 notebook's cells: a command step feeding parallel_run_function inside @pipeline,
# submitted with ml_client.jobs.create_or_update, streamed, its output downloaded. The
# only prsd line is the client's construction. argv: spool, then "fail" for k=0, which
# the entry script refuses, "from_config" for Azure's MLClient.from_config(). Run from a folder holding v2src/ and raw/.
import sys

from azure.ai.ml import Input, Output, command
from azure.ai.ml.constants import AssetTypes
from azure.ai.ml.dsl import pipeline
from azure.ai.ml.parallel import RunFunction, parallel_run_function

from prsd.azure import MLClient

if "from_config" in sys.argv:  # Azure's own line: the spool is in config.json
    ml_client = MLClient.from_config(credential=None)
else:
    ml_client = MLClient(spool=sys.argv[1])  # was: MLClient(DefaultAzureCredential(), sub, rg, ws)

# %%
cpu_compute_target = "cpu-cluster"
print(ml_client.compute.get(cpu_compute_target))

# %%
prep = command(
    name="prep",
    display_name="prepare the files",
    inputs=dict(raw=Input(type=AssetTypes.URI_FOLDER), copies=2),
    outputs=dict(prepared=Output(type=AssetTypes.URI_FOLDER)),
    code="./v2src",
    command="python prep.py --raw ${{inputs.raw}} --copies ${{inputs.copies}} --out ${{outputs.prepared}}",
    environment="azureml:AzureML-sklearn-1.0-ubuntu20.04-py38-cpu@latest",
)

score = parallel_run_function(
    name="batch_score",
    inputs=dict(job_data_path=Input(type=AssetTypes.URI_FOLDER), k=5),
    outputs=dict(job_output_path=Output(type=AssetTypes.URI_FOLDER)),
    input_data="${{inputs.job_data_path}}",
    instance_count=2,
    max_concurrency_per_instance=2,
    mini_batch_size="3",
    mini_batch_error_threshold=0 if "fail" in sys.argv else 5,
    retry_settings=dict(max_retries=0 if "fail" in sys.argv else 2, timeout=60),
    logging_level="DEBUG",
    task=RunFunction(
        code="./v2src",
        entry_script="score.py",
        program_arguments="--k ${{inputs.k}}",
        environment="azureml:AzureML-sklearn-1.0-ubuntu20.04-py38-cpu@latest",
        append_row_to="${{outputs.job_output_path}}",
    ),
)


@pipeline(default_compute="cpu-cluster")
def prep_and_score(raw_data):
    prepared = prep(raw=raw_data)
    scored = score(job_data_path=prepared.outputs.prepared, k=0 if "fail" in sys.argv else 7)
    return {"scores": scored.outputs.job_output_path}


pipeline_job = prep_and_score(raw_data=Input(type=AssetTypes.URI_FOLDER, path="./raw"))

# %%
pipeline_job = ml_client.jobs.create_or_update(pipeline_job, experiment_name="v2-prep-and-score")
print("submitted", pipeline_job.name)

# %%
ml_client.jobs.stream(pipeline_job.name)

# %%
print("status", ml_client.jobs.get(pipeline_job.name).status)
print("steps", sorted((s.display_name, s.status) for s in ml_client.jobs.list(parent_job_name=pipeline_job.name)))
ml_client.jobs.download(pipeline_job.name, output_name="scores", download_path="./results")
print("downloaded")
