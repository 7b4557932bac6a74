"""The notebooks' execution cache: one execution per notebook, read by the checks and the website.

Jupyter Book's ``execute_notebooks: cache`` keeps each executed notebook in a jupyter-cache
folder (``execute: cache:`` in _config.yml) and matches a notebook by its code cells and kernel.
What that code imports is not part of the match, so the folder also holds a key of everything
else a notebook's outputs depend on: the ``lab_utils`` package, ``pyproject.toml``,
``constraints.txt`` and the Python version. Whenever that key differs, the whole cache is
emptied before anything reads it: a stale output can never hide a failure.

Used by scripts/run_notebooks.py (which executes the notebooks into the cache) and by
course_site.py (every book build checks the key before myst-nb reads the cache).
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KEYED = ("lab_utils", "pyproject.toml", "constraints.txt")  # what every notebook depends on
KEY_FILE = "course_key.txt"
SKIPPED_PARTS = ("__pycache__", ".ipynb_checkpoints")


def course_key(root: Path = ROOT) -> str:
    """A SHA-256 of every file in KEYED (path and bytes) and the running Python's version."""
    digest = hashlib.sha256(sys.version.encode())
    for name in KEYED:
        path = root / name
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            relative = file.relative_to(root)
            if file.suffix == ".pyc" or any(part in SKIPPED_PARTS for part in relative.parts):
                continue
            digest.update(relative.as_posix().encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()


def cache_folder(root: Path = ROOT) -> Path:
    """The cache folder _config.yml names (``execute: cache:``), relative to ``root``."""
    import yaml

    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    return root / config["execute"]["cache"]


def invalidate_if_stale(folder: Path, root: Path = ROOT) -> bool:
    """Empty ``folder`` when it was filled under another course key; True when it did."""
    key = course_key(root)
    stamp = folder / KEY_FILE
    stale = folder.exists() and (not stamp.is_file() or stamp.read_text().strip() != key)
    if stale:
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    stamp.write_text(key + "\n")
    return stale
