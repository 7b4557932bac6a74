"""Files the notebooks use beside their code ship inside lab_utils (package data), so a notebook
opened alone finds them: notebook 04's worker, notebook 07's DDP script."""

import fnmatch
import json
from pathlib import Path

import pytest

from lab_utils import course_files
from lab_utils.catalogs import tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_the_shipped_files_are_there():
    worker = course_files.path("worker")
    assert {p.name for p in worker.iterdir() if p.is_file()} >= {
        "handler.py",
        "Dockerfile",
        "Dockerfile.gpu",
        "template.json",
        "template.gpu.json",
    }
    assert course_files.path("scripts/ddp_train.py").is_file()


def test_every_shipped_file_is_in_the_package_data_pyproject_declares():
    # a file outside these patterns is missing from the installed package (pip install from git, Colab)
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"][
        "lab_utils"
    ]
    package = ROOT / "lab_utils"
    for folder in course_files.SHIPPED:
        for path in (package / "data" / folder).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                relative = path.relative_to(package).as_posix()
                assert any(fnmatch.fnmatch(relative, p) for p in patterns), relative


def test_the_gpu_template_differs_from_the_cpu_one_where_a_gpu_needs_it():
    cpu = json.loads(course_files.path("worker/template.json").read_text())
    gpu = json.loads(course_files.path("worker/template.gpu.json").read_text())
    assert set(cpu) == set(gpu)
    assert (cpu["category"], gpu["category"]) == ("CPU", "NVIDIA")
    assert gpu["containerDiskInGb"] >= 15 > cpu["containerDiskInGb"]  # a CUDA torch image is several GB
    assert gpu["dockerStartCmd"] == cpu["dockerStartCmd"]
    dockerfile = course_files.path("worker/Dockerfile.gpu").read_text()
    assert "cuda" in dockerfile.split("FROM", 1)[0].lower()  # the base image carries CUDA and its torch


@pytest.mark.parametrize(
    "name",
    ["nowhere", "worker/nothing.py", "../catalogs.py", "worker/../../catalogs.py", "hardware.toml", ""],
)
def test_other_names_are_refused(name):
    with pytest.raises(ValueError, match="name="):
        course_files.path(name)
