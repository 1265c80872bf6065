# A notebook in the shape of Azure's file-dataset-image-inference-mnist.ipynb (a blob
# container as the dataset, PipelineParameters for the dataset, mini_batch_size and
# process_count_per_node, a model registered from a folder, a single-image re-run by
# pipeline_parameters), with prsd's own stand-in data and entry script (Code/digit_lookup.py).
# Run from a folder holding config.json, Code/ and models/.

# %%
from azureml.core import Workspace

ws = Workspace.from_config()
print("Workspace name: " + ws.name)

# %%
from azureml.core.compute import AmlCompute, ComputeTarget

compute_name = "cpu-cluster"
if compute_name in ws.compute_targets:
    compute_target = ws.compute_targets[compute_name]
else:
    config = AmlCompute.provisioning_configuration(vm_size="STANDARD_D2_V2", max_nodes=4)
    compute_target = ComputeTarget.create(ws, compute_name, config)
    compute_target.wait_for_completion(show_output=True)

# %%
from azureml.core.datastore import Datastore

mnist_data = Datastore.register_azure_blob_container(
    ws, datastore_name="mnist_datastore", container_name="sampledata",
    account_name="pipelinedata", overwrite=True,
)
def_data_store = ws.get_default_datastore()

# %%
from azureml.core.dataset import Dataset

path_on_datastore = mnist_data.path("mnist")
input_mnist_ds = Dataset.File.from_files(path=path_on_datastore, validate=False)

# %%
from azureml.data.dataset_consumption_config import DatasetConsumptionConfig
from azureml.pipeline.core import PipelineParameter

pipeline_param = PipelineParameter(name="mnist_param", default_value=input_mnist_ds)
input_mnist_ds_consumption = DatasetConsumptionConfig("minist_param_config", pipeline_param).as_mount()

# %%
from azureml.pipeline.core import Pipeline, PipelineData

output_dir = PipelineData(name="inferences", datastore=def_data_store)

# %%
from azureml.core.model import Model

model = Model.register(model_path="models/", model_name="mnist-prs",
                       tags={"pretrained": "mnist"}, description="digits", workspace=ws)

# %%
from azureml.core import Environment
from azureml.core.runconfig import CondaDependencies, DEFAULT_CPU_IMAGE

batch_conda_deps = CondaDependencies.create(python_version="3.8", conda_packages=["pip==20.2.4"],
                                            pip_packages=["pillow", "azureml-core",
                                                          "azureml-dataset-runtime[fuse]"])
batch_env = Environment(name="batch_environment")
batch_env.python.conda_dependencies = batch_conda_deps
batch_env.docker.base_image = DEFAULT_CPU_IMAGE

# %%
from azureml.pipeline.steps import ParallelRunConfig, ParallelRunStep

parallel_run_config = ParallelRunConfig(
    source_directory="Code",
    entry_script="digit_lookup.py",
    mini_batch_size=PipelineParameter(name="batch_size_param", default_value="5"),
    error_threshold=10,
    output_action="append_row",
    append_row_file_name="mnist_outputs.txt",
    environment=batch_env,
    compute_target=compute_target,
    process_count_per_node=PipelineParameter(name="process_count_param", default_value=2),
    node_count=2,
)
parallelrun_step = ParallelRunStep(
    name="predict-digits-mnist",
    parallel_run_config=parallel_run_config,
    inputs=[input_mnist_ds_consumption],
    output=output_dir,
    allow_reuse=False,
)

# %%
from azureml.core import Experiment

pipeline = Pipeline(workspace=ws, steps=[parallelrun_step])
experiment = Experiment(ws, "digit_identification")

# %%
import os
import tempfile

import pandas as pd


def predictions(run):
    run.wait_for_completion(show_output=True)
    batch_run = run.find_step_run(parallelrun_step.name)[0]
    batch_output = batch_run.get_output_data(output_dir.name)
    target_dir = tempfile.mkdtemp()
    batch_output.download(local_path=target_dir)
    result_file = os.path.join(target_dir, batch_output.path_on_datastore,
                               parallel_run_config.append_row_file_name)
    df = pd.read_csv(result_file, delimiter=":", header=None)
    df.columns = ["Filename", "Prediction"]
    return df.sort_values("Filename")


try:
    experiment.submit(pipeline, pipeline_parameters={"typo_param": 1})
except ValueError as exc:
    print("refused:", exc)

# %%
pipeline_run = experiment.submit(pipeline)
df = predictions(pipeline_run)
print("Prediction has ", df.shape[0], " rows")
print(df.to_csv(index=False))

# %%
single_image_ds = Dataset.File.from_files(path=mnist_data.path("mnist/0.png"), validate=False)
pipeline_run_2 = experiment.submit(pipeline, pipeline_parameters={"mnist_param": single_image_ds,
                                                                  "batch_size_param": "1",
                                                                  "process_count_param": 1})
df2 = predictions(pipeline_run_2)
print("Single image prediction has ", df2.shape[0], " rows")
print(df2.to_csv(index=False))
