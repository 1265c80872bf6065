# A v1 notebook of our own: Model.register, a PythonScriptStep writing PipelineData,
# a ParallelRunStep reading it with an entry script that loads the model, a
# PipelineParameter given at submit. Run from a folder holding config.json and v1chain/.
import os
import tempfile

from azureml.core import Environment, Experiment, Model, Workspace
from azureml.core.conda_dependencies import CondaDependencies
from azureml.pipeline.core import Pipeline, PipelineData, PipelineParameter
from azureml.pipeline.steps import ParallelRunConfig, ParallelRunStep, PythonScriptStep

ws = Workspace.from_config()
with open("factor.txt", "w") as f:
    f.write("3")
print(Model.register(ws, model_path="factor.txt", model_name="factor"))

# %%
numbers = PipelineData("numbers", datastore=ws.get_default_datastore())
scores = PipelineData("scores", datastore=ws.get_default_datastore())
count = PipelineParameter("count", default_value=4)
prep = PythonScriptStep("prep.py", name="make numbers", arguments=["--out", numbers, "--count", count],
                        outputs=[numbers], source_directory="v1chain")
env = Environment("scoring")
env.python.conda_dependencies = CondaDependencies.create(pip_packages=["azureml-defaults"])
config = ParallelRunConfig(environment=env, entry_script="score.py", error_threshold=0,
                           output_action="append_row", compute_target="cpu-cluster", node_count=1,
                           mini_batch_size="2", source_directory="v1chain")
score = ParallelRunStep("score numbers", config, inputs=[numbers], output=scores)

# %%
run = Experiment(ws, "chain").submit(Pipeline(ws, [prep, score]), pipeline_parameters={"count": 6})
print("status", run.wait_for_completion(show_output=True))
print("steps", [(s.name, s.get_status()) for s in run.get_steps()])

# %%
out = run.find_step_run("score numbers")[0].get_output_data("scores")
target = tempfile.mkdtemp()
out.download(local_path=target)
with open(os.path.join(target, out.path_on_datastore, "parallel_run_step.txt")) as f:
    print("rows", sorted(f.read().split("\n")))
