"""Write the digits example's data: PNG images to score, a training split, the labels.

scikit-learn's bundled ``load_digits()`` set (1797 grayscale 8x8 images, values 0..16)
is split in two halves, stratified by digit and always the same:

- ``data/images/<NNNNN>.png``: the held-out half, the job's input (``NNNNN`` is the
  image's index in ``load_digits()``), scaled to 0..255 grayscale;
- ``data/train.npz``: the other half (``images``, uint8 0..255 like the PNGs; ``labels``),
  which the entry script's ``init()`` fits its classifier on;
- ``data/labels.csv``: ``file,label`` for every PNG, in file name order; only
  ``check.py`` reads it.

Idempotent: files already holding the right bytes are left alone, stray PNGs removed.

Usage: python examples/digits/prepare.py [--data DIR]
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

HERE = Path(__file__).resolve().parent
SEED = 0


def to_uint8(images: np.ndarray) -> np.ndarray:
    """Scale load_digits' 0..16 values to 0..255 grayscale."""
    return np.rint(images * (255.0 / 16.0)).clip(0, 255).astype(np.uint8)


def png_bytes(image: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(image, mode="L").save(buf, format="PNG")
    return buf.getvalue()


def write_if_changed(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` (aside, then renamed) unless it already holds it."""
    try:
        if path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
    return True


def write_train(path: Path, images: np.ndarray, labels: np.ndarray) -> bool:
    """Write the training split unless the file already holds the same arrays."""
    try:
        with np.load(path) as old:
            if np.array_equal(old["images"], images) and np.array_equal(old["labels"], labels):
                return False
    except (OSError, KeyError, ValueError):
        pass
    tmp = path.with_name(f".{path.name}.tmp.npz")
    np.savez_compressed(tmp, images=images, labels=labels)
    tmp.replace(path)
    return True


def labels_csv(names: list[str], labels: np.ndarray) -> bytes:
    buf = io.StringIO(newline="")
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["file", "label"])
    writer.writerows(zip(names, labels.tolist(), strict=True))
    return buf.getvalue().encode()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=HERE / "data", help="output folder")
    args = parser.parse_args(argv)
    start = time.perf_counter()

    digits = load_digits()
    index = np.arange(len(digits.target))
    train_idx, test_idx = train_test_split(
        index, test_size=0.5, stratify=digits.target, random_state=SEED
    )
    train_idx, test_idx = np.sort(train_idx), np.sort(test_idx)
    pixels = to_uint8(digits.images)

    data: Path = args.data
    images_dir = data / "images"
    images_dir.mkdir(parents=True, exist_ok=True)
    names = [f"{i:05d}.png" for i in test_idx]
    written = sum(
        write_if_changed(images_dir / name, png_bytes(pixels[i]))
        for name, i in zip(names, test_idx, strict=True)
    )
    keep = set(names)
    stray = [p for p in images_dir.iterdir() if p.name not in keep]
    for p in stray:
        if p.is_dir() and not p.is_symlink():
            print(f"digits: warning: {p} is not one of the images; remove it", file=sys.stderr)
        else:
            p.unlink()

    train_written = write_train(data / "train.npz", pixels[train_idx], digits.target[train_idx])
    labels_written = write_if_changed(
        data / "labels.csv", labels_csv(names, digits.target[test_idx])
    )

    shown = os.path.relpath(data)
    print(
        f"digits: {len(names)} images in {shown}/images "
        f"({written} written, {len(names) - written} unchanged"
        + (f", {len(stray)} stray removed" if stray else "")
        + ")"
    )
    print(
        f"digits: {len(train_idx)} training images in {shown}/train.npz "
        f"({'written' if train_written else 'unchanged'})"
    )
    print(
        f"digits: labels of the {len(names)} images in {shown}/labels.csv "
        f"({'written' if labels_written else 'unchanged'})"
    )
    print(f"digits: prepared in {time.perf_counter() - start:.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
