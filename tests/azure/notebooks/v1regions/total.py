"""The regions fixture's entry script: each row with its region's total of ``a``."""


def run(mini_batch, mini_batch_context):
    region = mini_batch_context.partition_key_value["region"]
    mini_batch["total"] = mini_batch["a"].sum()
    mini_batch["key"] = region
    return mini_batch
