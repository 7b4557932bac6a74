"""Reference measurements taken on a real GPU by ``scripts/gpu_reference.py``.

A reference file, ``lab_utils/data/reference/<device>.json``, holds what the course's own code
measured on that device (never typed-in figures), with the machine report and the date, so
notebooks and ``lab-utils bench`` can show a learner's numbers beside it, labelled "measured
on <device>, <date>". Until a GPU run has produced one, ``load()`` returns None and
``caption(None)`` says so. No torch.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

FORMAT_VERSION = 1
NO_REFERENCE = "no GPU reference yet"


@dataclass(frozen=True)
class Reference:
    """One reference run: the device, the date (YYYY-MM-DD), the machine report, the results, and
    the software and GPU state (driver, clocks, power limit, MIG mode) it ran with ({} in files
    written before they were recorded)."""

    device: str
    date: str
    machine: dict
    measurements: dict
    skipped: dict
    path: Path
    software: dict = field(default_factory=dict)
    gpu_state: dict = field(default_factory=dict)


def slug(device_name: str) -> str:
    """File name stem for a device: 'NVIDIA H200' -> 'nvidia-h200'."""
    if not isinstance(device_name, str) or not device_name.strip():
        raise ValueError(f"device_name={device_name!r}: must be a non-empty string")
    return re.sub(r"[^a-z0-9]+", "-", device_name.lower()).strip("-")


def default_directory() -> Path:
    """Where the course keeps its reference files (inside the installed package)."""
    return Path(str(resources.files("lab_utils").joinpath("data", "reference")))


def read(path) -> Reference:
    """Parse one reference file; ValueError says what is missing or of the wrong format."""
    path = Path(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("format") != FORMAT_VERSION:
        raise ValueError(f"{path.name}: format {data.get('format')!r}, expected {FORMAT_VERSION}")
    missing = [key for key in ("device", "date", "machine", "measurements", "skipped") if key not in data]
    if missing:
        raise ValueError(f"{path.name}: lacks {', '.join(missing)}")
    return Reference(
        data["device"],
        data["date"],
        data["machine"],
        data["measurements"],
        data["skipped"],
        path,
        software=data.get("software") or {},
        gpu_state=data.get("gpu_state_before") or {},
    )


def load(device_name: str | None = None, directory=None) -> Reference | None:
    """The reference for ``device_name`` (None: the newest of any device), or None if there is none."""
    directory = default_directory() if directory is None else Path(directory)
    if device_name is not None:
        path = directory / f"{slug(device_name)}.json"
        return read(path) if path.is_file() else None
    references = [read(path) for path in sorted(directory.glob("*.json"))]
    return max(references, key=lambda r: r.date, default=None)


def caption(reference: Reference | None) -> str:
    """'measured on NVIDIA H200, 2026-12-01', or 'no GPU reference yet'."""
    return NO_REFERENCE if reference is None else f"measured on {reference.device}, {reference.date}"
