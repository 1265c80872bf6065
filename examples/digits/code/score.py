"""Score 8x8 digit images: an Azure ParallelRunStep entry script, unchanged for prsd.

The job passes ``--train <path to train.npz>``; ``init()`` fits a support vector
classifier on it once per worker process, and ``run()`` gets a list of PNG file paths
and returns one ``"<file name>: <digit>"`` line per image, in input order.
"""

import argparse
import os

import numpy as np
from PIL import Image
from sklearn.svm import SVC

from azureml_user.parallel_run import EntryScript

model = None
logger = None


def init():
    """Load the training split and fit the classifier (once per worker process)."""
    global model, logger
    logger = EntryScript().logger

    parser = argparse.ArgumentParser(allow_abbrev=False, description="ParallelRunStep Agent")
    parser.add_argument("--train", type=str, required=True, help="train.npz: images, labels")
    # parse_known_args: the command line may hold arguments meant for others.
    args, _ = parser.parse_known_args()

    with np.load(args.train) as data:
        images, labels = data["images"], data["labels"]
    features = images.reshape(len(images), -1).astype(np.float32) / 255.0
    model = SVC(C=10.0, gamma="scale").fit(features, labels)
    logger.info(
        "init: fitted %s on %d images from %s",
        type(model).__name__,
        len(labels),
        args.train,
    )


def _pixels(path):
    with Image.open(path) as image:
        pixels = np.asarray(image.convert("L"), dtype=np.float32) / 255.0
    if pixels.shape != (8, 8):
        raise ValueError(f"expected an 8x8 image, got {pixels.shape[1]}x{pixels.shape[0]}")
    return pixels.reshape(-1)


def run(mini_batch):
    """Predict the digit in each image file; one result line per image read."""
    names, rows = [], []
    for path in mini_batch:
        try:
            rows.append(_pixels(path))
        except (OSError, ValueError) as exc:
            # Left out of the result: counted as a failed item, as in Azure.
            logger.warning("skipping %s: %s", path, exc)
            continue
        names.append(os.path.basename(path))
    if not rows:
        return []
    digits = model.predict(np.stack(rows))
    logger.debug("scored %d of %d images", len(rows), len(mini_batch))
    return [f"{name}: {digit}" for name, digit in zip(names, digits, strict=True)]
