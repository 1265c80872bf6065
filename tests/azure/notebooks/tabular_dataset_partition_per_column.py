# Azure's tabular-dataset-partition-per-column.ipynb (Azure/MachineLearningNotebooks,
# how-to-use-azureml/machine-learning-pipelines/parallel-run/, commit f1aff55), its code
# cells in order and unchanged, but that a cell's last bare expression, which a notebook
# displays, is printed (df.head(10) as CSV). Run from a folder holding config.json and Code/.
# Copyright (c) Microsoft Corporation; the cells are used under the MIT license.

# %%
from azureml.core.workspace import Workspace
ws = Workspace.from_config()
print('Workspace name: ' + ws.name, 
      'Azure region: ' + ws.location, 
      'Subscription id: ' + ws.subscription_id, 
      'Resource group: ' + ws.resource_group, sep = '\n')

datastore = ws.get_default_datastore()

# %%
import azureml.core
print(azureml.core.VERSION)

# %%
oj_sales_path = "./oj.csv"
# (the download into oj.csv is left out: the test writes its own oj.csv)

# %%
datastore.upload_files([oj_sales_path], ".", "oj_sales_data", overwrite=True, show_progress=False)

# %%
from azureml.core import Dataset

dataset = Dataset.Tabular.from_delimited_files(path=(datastore, 'oj_sales_data/*.csv'))
print(dataset.to_pandas_dataframe())

# %%
partitioned_dataset = dataset.partition_by(partition_keys=['Store', 'Brand'], target=(datastore, "partition_by_key_res"), name="partitioned_oj_data")
print(partitioned_dataset.partition_keys)

# %%
import os
from azureml.core.compute import AmlCompute, ComputeTarget

# choose a name for your cluster
compute_name = os.environ.get("AML_COMPUTE_CLUSTER_NAME", "cpu-cluster")
compute_min_nodes = os.environ.get("AML_COMPUTE_CLUSTER_MIN_NODES", 0)
compute_max_nodes = os.environ.get("AML_COMPUTE_CLUSTER_MAX_NODES", 2)

# This example uses CPU VM. For using GPU VM, set SKU to Standard_NC6s_v3
vm_size = os.environ.get("AML_COMPUTE_CLUSTER_SKU", "STANDARD_D2_V2")


if compute_name in ws.compute_targets:
    compute_target = ws.compute_targets[compute_name]
    if compute_target and type(compute_target) is AmlCompute:
        print('found compute target. just use it. ' + compute_name)
else:
    print('creating a new compute target...')
    provisioning_config = AmlCompute.provisioning_configuration(vm_size = vm_size,
                                                                min_nodes = compute_min_nodes, 
                                                                max_nodes = compute_max_nodes)

    # create the cluster
    compute_target = ComputeTarget.create(ws, compute_name, provisioning_config)
    
    # can poll for a minimum number of nodes and for a specific timeout. 
    # if no min node count is provided it will use the scale settings for the cluster
    compute_target.wait_for_completion(show_output=True, min_node_count=None, timeout_in_minutes=20)
    
     # For a more detailed view of current AmlCompute status, use get_status()
    print(compute_target.get_status().serialize())

# %%
from azureml.pipeline.core import Pipeline, PipelineData

output_dir = PipelineData(name="inferences", datastore=datastore)

# %%
scripts_folder = "Code"
script_file = "total_income.py"

# peek at contents
with open(os.path.join(scripts_folder, script_file)) as inference_file:
    print(inference_file.read())

# %%
from azureml.core import Environment
from azureml.core.runconfig import CondaDependencies, DEFAULT_CPU_IMAGE

batch_conda_deps = CondaDependencies.create(pip_packages=["azureml-core", "azureml-dataset-runtime[fuse,pandas]"])
batch_env = Environment(name="batch_environment")
batch_env.python.conda_dependencies = batch_conda_deps
batch_env.docker.base_image = DEFAULT_CPU_IMAGE

# %%
from azureml.pipeline.steps import ParallelRunStep, ParallelRunConfig

# In a real-world scenario, you'll want to shape your process per node and nodes to fit your problem domain.
parallel_run_config = ParallelRunConfig(
    source_directory=scripts_folder,
    entry_script=script_file,  # the user script to run against each input
    partition_keys=['Store', 'Brand'],
    error_threshold=5,
    output_action='append_row',
    append_row_file_name="revenue_outputs.txt",
    environment=batch_env,
    compute_target=compute_target, 
    node_count=2,
    run_invocation_timeout=600
)

# %%
parallel_run_step = ParallelRunStep(
    name='summarize-revenue',
    inputs=[partitioned_dataset.as_named_input("partitioned_tabular_input")],
    output=output_dir,
    parallel_run_config=parallel_run_config,
    allow_reuse=False
)

# %%
from azureml.core import Experiment
from azureml.pipeline.core import Pipeline

pipeline = Pipeline(workspace=ws, steps=[parallel_run_step])

pipeline_run = Experiment(ws, 'tabular-dataset-partition').submit(pipeline)

# %%
pipeline_run.wait_for_completion(show_output=True)

# %%
import pandas as pd
import tempfile

batch_run = pipeline_run.find_step_run(parallel_run_step.name)[0]
batch_output = batch_run.get_output_data(output_dir.name)

target_dir = tempfile.mkdtemp()
batch_output.download(local_path=target_dir)
result_file = os.path.join(target_dir, batch_output.path_on_datastore, parallel_run_config.append_row_file_name)

df = pd.read_csv(result_file, delimiter=" ", header=None)
df.columns=["WeekStarting", "Quantity", "logQuantity", "Advert", "Price", "Age60", "COLLEGE", "INCOME", "Hincome150", "Large HH", "Minorities", "WorkingWoman", "SSTRDIST", "SSTRVOL", "CPDIST5", "CPWVOL5", "Store", "Brand", "total_income"]

print("Prediction has ", df.shape[0], " rows")
print(df.head(10).to_csv(index=False))
