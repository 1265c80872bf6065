# A v1 notebook of our own, shaped like Azure's MNIST one: a FileDataset scored by a
# ParallelRunStep whose environment pins python=3.8 and lists Azure's SDK packages and
# a package with no wheel. Run from a folder holding config.json, v1build/ and imgs/.
from azureml.core import Dataset, Environment, Experiment, Workspace
from azureml.core.conda_dependencies import CondaDependencies
from azureml.pipeline.core import Pipeline, PipelineData
from azureml.pipeline.steps import ParallelRunConfig, ParallelRunStep

ws = Workspace.from_config()
store = ws.get_default_datastore()
store.upload("imgs", "mnist", overwrite=True, show_progress=False)
images = Dataset.File.from_files(path=(store, "mnist/*"))

# %%
deps = CondaDependencies.create(python_version="3.8", pip_packages=["azureml-defaults", "prsd-srconly-demo==0.1"])
env = Environment(name="batch_environment")
env.python.conda_dependencies = deps

# %%
out = PipelineData("scores", datastore=store)
config = ParallelRunConfig(environment=env, entry_script="score.py", source_directory="v1build", error_threshold=0,
                           output_action="append_row", compute_target="cpu-cluster", node_count=1, mini_batch_size="2")
step = ParallelRunStep("mnist-score", config, inputs=[images.as_named_input("mnist")], output=out)
run = Experiment(ws, "mnist-build").submit(Pipeline(ws, [step]))
print("status", run.wait_for_completion(show_output=True))
