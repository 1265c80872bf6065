"""An entry script shaped like Azure's MNIST digit_identification.py: the model comes from
``Model.get_model_path`` as the folder a notebook registered, and file names are joined
onto it; each input "image" is a text file holding its digit's name."""

import os

from azureml.core import Model


def init():
    global g_digits
    model_path = Model.get_model_path("mnist-prs")
    with open(os.path.join(model_path, "digits.model.meta")) as f:
        g_digits = dict(line.strip().split("=") for line in f if line.strip())


def run(mini_batch):
    print(f"run method start: {__file__}, run({mini_batch})")
    result_list = []
    for image in mini_batch:
        with open(image) as f:
            word = f.read().strip()
        result_list.append("{}: {}".format(os.path.basename(image), g_digits[word]))
    return result_list
