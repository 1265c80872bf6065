"""The offline azureml.core's model lookup in one models folder."""

from __future__ import annotations

from typing import TYPE_CHECKING

from azureml_user.compat.azureml.core.model import find_model

if TYPE_CHECKING:
    from pathlib import Path


def test_versions_single_files_and_folders(tmp_path: Path) -> None:
    """Highest version by default; a one-file version is the file; a plain file works."""
    (tmp_path / "m" / "1").mkdir(parents=True)
    (tmp_path / "m" / "1" / "model.pkl").write_text("1")
    (tmp_path / "m" / "10").mkdir()
    (tmp_path / "m" / "10" / "a.bin").write_text("a")
    (tmp_path / "m" / "10" / "b.bin").write_text("b")
    (tmp_path / "flat").mkdir()
    (tmp_path / "flat" / "w.pt").write_text("w")
    (tmp_path / "single").write_text("s")
    assert find_model(str(tmp_path), "m", None) == str(tmp_path / "m" / "10")
    assert find_model(str(tmp_path), "m", 1) == str(tmp_path / "m" / "1" / "model.pkl")
    assert find_model(str(tmp_path), "m", 2) is None
    assert find_model(str(tmp_path), "flat", None) == str(tmp_path / "flat" / "w.pt")
    assert find_model(str(tmp_path), "single", None) == str(tmp_path / "single")
    assert find_model(str(tmp_path), "absent", None) is None


def test_a_version_registered_from_a_folder_is_that_folder(tmp_path: Path) -> None:
    """``Model.register(model_path="models/", ...)`` stores ``<name>/<version>/models/``;
    Azure's ``get_model_path`` returns that folder, and Azure's MNIST script joins file
    names onto it. Without versions, a lone subfolder is not stepped into."""
    (tmp_path / "mnist-prs" / "1" / "models").mkdir(parents=True)
    (tmp_path / "mnist-prs" / "1" / "models" / "mnist-tf.model.meta").write_text("m")
    (tmp_path / "mnist-prs" / "1" / "models" / "mnist-tf.model.index").write_text("i")
    (tmp_path / "plain" / "inner").mkdir(parents=True)
    registered = str(tmp_path / "mnist-prs" / "1" / "models")
    assert find_model(str(tmp_path), "mnist-prs", None) == registered
    assert find_model(str(tmp_path), "mnist-prs", 1) == registered
    assert find_model(str(tmp_path), "plain", None) == str(tmp_path / "plain")
