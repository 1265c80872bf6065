import argparse
import os

parser = argparse.ArgumentParser()
parser.add_argument("--out")
args, _ = parser.parse_known_args()
os.makedirs(args.out, exist_ok=True)
for i in range(4):
    with open(os.path.join(args.out, f"{i}.txt"), "w") as f:
        f.write(f"{i}\n")
print("prepared 4 files")
