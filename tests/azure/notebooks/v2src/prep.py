"""Command step of the v2 fixture: copy each raw file ``--copies`` times into ``--out``."""

import argparse
import os
import shutil

p = argparse.ArgumentParser()
p.add_argument("--raw")
p.add_argument("--copies", type=int)
p.add_argument("--out")
a = p.parse_args()
for name in sorted(os.listdir(a.raw)):
    for i in range(a.copies):
        shutil.copyfile(os.path.join(a.raw, name), os.path.join(a.out, f"{i}-{name}"))
print(f"prepared {len(os.listdir(a.out))} files")
