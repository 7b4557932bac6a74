"""Every notebook carries the metadata Google Colab reads: a T4 GPU where the notebook benefits
from one (scripts/colab_metadata.py keeps the list), and no one's editing history."""

import importlib.util
import json
import shutil
from pathlib import Path

import nbformat
import pytest

from lab_utils import course

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = course.notebook_paths(ROOT / "notebooks")

_spec = importlib.util.spec_from_file_location("colab_metadata", ROOT / "scripts" / "colab_metadata.py")
colab_metadata = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(colab_metadata)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_carries_the_colab_metadata(path):
    metadata = json.loads(path.read_text(encoding="utf-8"))["metadata"]
    fix = f"run: python scripts/colab_metadata.py notebooks/{path.name}"
    assert metadata.get("colab", {}).get("provenance") == [], fix
    if colab_metadata.wants_gpu(path):
        assert metadata.get("accelerator") == "GPU", fix
        assert metadata["colab"].get("gpuType") == colab_metadata.COLAB_GPU_TYPE, fix
    else:
        assert "accelerator" not in metadata and "gpuType" not in metadata["colab"], fix
    assert not colab_metadata.apply(path, write=False), fix


def test_every_notebook_number_is_classified():
    listed = set(colab_metadata.GPU_NOTEBOOKS) | set(colab_metadata.CPU_NOTEBOOKS)
    assert not set(colab_metadata.GPU_NOTEBOOKS) & set(colab_metadata.CPU_NOTEBOOKS)
    unlisted = [path.name for path in NOTEBOOKS if path.name[:2] not in listed]
    assert not unlisted, (
        f"add these to GPU_NOTEBOOKS or CPU_NOTEBOOKS in scripts/colab_metadata.py: {unlisted}"
    )


def test_the_script_changes_only_metadata_and_is_idempotent(tmp_path):
    copy = tmp_path / "03_example.ipynb"
    shutil.copy(ROOT / "templates" / "notebook.ipynb", copy)
    notebook = nbformat.read(copy, as_version=4)
    notebook.metadata["colab"] = {
        "provenance": [{"file_id": "someone's drive"}],
        "gpuType": "A100",
        "name": "x",
    }
    nbformat.write(notebook, copy)
    cells_before = nbformat.read(copy, as_version=4).cells

    assert colab_metadata.apply(copy) is True
    first = copy.read_bytes()
    assert colab_metadata.apply(copy) is False
    assert copy.read_bytes() == first
    after = nbformat.read(copy, as_version=4)
    assert after.cells == cells_before
    assert after.metadata["colab"] == {"provenance": [], "gpuType": "T4", "name": "x"}
    assert after.metadata["accelerator"] == "GPU"


def test_a_cpu_notebook_loses_a_gpu_request(monkeypatch, tmp_path):
    monkeypatch.setattr(colab_metadata, "GPU_NOTEBOOKS", {})
    monkeypatch.setattr(colab_metadata, "CPU_NOTEBOOKS", {"03": "no tensors"})
    copy = tmp_path / "03_example.ipynb"
    shutil.copy(ROOT / "templates" / "notebook.ipynb", copy)
    notebook = nbformat.read(copy, as_version=4)
    notebook.metadata.update(accelerator="GPU", colab={"provenance": [], "gpuType": "T4"})
    nbformat.write(notebook, copy)
    colab_metadata.apply(copy)
    metadata = nbformat.read(copy, as_version=4).metadata
    assert "accelerator" not in metadata and metadata["colab"] == {"provenance": []}


def test_an_unlisted_or_misnamed_notebook_is_refused():
    with pytest.raises(ValueError, match="neither GPU_NOTEBOOKS nor CPU_NOTEBOOKS"):
        colab_metadata.wants_gpu(Path("99_future.ipynb"))
    with pytest.raises(ValueError, match="NN_topic.ipynb"):
        colab_metadata.wants_gpu(Path("scratch.ipynb"))
