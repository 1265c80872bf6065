"""Split a sales CSV into one folder per key group and describe it with an MLTable.

As Azure's OJ sample does: the key columns leave the files and come back from the
folder names through the MLTable's ``extract_columns_from_partition_format``.
"""

import argparse
import os
import re

import pandas as pd
import yaml


def folder_name(value: object) -> str:
    return re.sub(r'[.\s\\|*/<>?:"]', "_", str(value))


parser = argparse.ArgumentParser()
parser.add_argument("--data_source")
parser.add_argument("--partition_keys")
parser.add_argument("--tabular_output_data")
args, _ = parser.parse_known_args()

frame = pd.read_csv(args.data_source)
keys = args.partition_keys.split(",")
for group, rows in frame.groupby(keys):
    target = os.path.join(args.tabular_output_data, *[folder_name(v) for v in group])
    os.makedirs(target, exist_ok=True)
    rows.drop(columns=keys).to_csv(os.path.join(target, "partitioned_data.csv"), index=False)
    print("wrote", target)

pattern = "".join("{" + k + "}/" for k in keys) + "{file_name}.{extension}"
table = {
    "type": "mltable",
    "paths": [{"pattern": "./**/*.csv"}],
    "transformations": [
        {
            "read_delimited": {
                "delimiter": ",",
                "encoding": "ascii",
                "header": "all_files_same_headers",
                "empty_as_string": False,
                "include_path_column": True,
            }
        },
        {"extract_columns_from_partition_format": {"partition_format": pattern}},
        {"drop_columns": ["Path", "file_name", "extension"]},
    ],
}
with open(os.path.join(args.tabular_output_data, "MLTable"), "w") as f:
    yaml.dump(table, f, default_flow_style=False)
