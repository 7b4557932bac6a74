"""Files the notebooks use beside their code, shipped inside lab_utils (package data), so a
notebook opened alone (on Colab, say) finds them once the setup cell has installed the course.

- ``worker``: notebook 04's serverless worker (handler.py, Dockerfile, Dockerfile.gpu,
  template.json, template.gpu.json).
- ``scripts/ddp_train.py``: notebook 07's training script, which torchrun launches.

>>> path("scripts/ddp_train.py").name
'ddp_train.py'
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

SHIPPED = ("worker", "scripts")  # the folders under lab_utils/data that hold these files


def path(name: str) -> Path:
    """The file or folder ``name`` (e.g. "worker", "scripts/ddp_train.py") under lab_utils/data."""
    parts = str(name).split("/")
    found = Path(str(resources.files("lab_utils").joinpath("data", *parts)))
    if parts[0] not in SHIPPED or ".." in parts or not found.exists():
        raise ValueError(
            f"name={name!r} is not a shipped course file; allowed: files under {', '.join(SHIPPED)}"
        )
    return found
