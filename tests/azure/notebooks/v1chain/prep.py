"""PythonScriptStep of the v1 chain: write --count numbered files into --out."""

import argparse
import os

p = argparse.ArgumentParser()
p.add_argument("--out")
p.add_argument("--count", type=int)
a = p.parse_args()
os.makedirs(a.out, exist_ok=True)
for i in range(a.count):
    with open(os.path.join(a.out, f"n{i:02d}.txt"), "w") as f:
        f.write(str(i))
print(f"wrote {a.count} files")
