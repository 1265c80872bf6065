# A v1 notebook of our own: a table whose key column is in its folder names
# (partition_format), grouped by that key in a ParallelRunStep. Run from a folder
# holding config.json, v1regions/ and sales/<region>/part.csv.
from azureml.core import Dataset, Experiment, Workspace
from azureml.pipeline.core import Pipeline, PipelineData
from azureml.pipeline.steps import ParallelRunConfig, ParallelRunStep

ws = Workspace.from_config()
store = ws.get_default_datastore()
store.upload("sales", "sales", overwrite=True, show_progress=False)
table = Dataset.Tabular.from_delimited_files(path=(store, "sales/*/part.csv"), partition_format="sales/{region}/part.csv")
print(table.to_pandas_dataframe())

# %%
out = PipelineData("totals", datastore=store)
config = ParallelRunConfig(environment=None, entry_script="total.py", error_threshold=0, output_action="append_row",
                           compute_target="cpu-cluster", node_count=1, partition_keys=["region"],
                           source_directory="v1regions")
step = ParallelRunStep("totals", config, inputs=[table.as_named_input("sales")], output=out)
run = Experiment(ws, "regions").submit(Pipeline(ws, [step]))
print("status", run.wait_for_completion(show_output=True))
