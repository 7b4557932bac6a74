"""The course's own notebooks: where they are and what their header promises.

Every notebook opens with a markdown cell in one shape (see templates/notebook.ipynb):

    # Title
    One-line promise.
    **Time:** 20 min · **Prerequisites:** none
    ## Learning objectives
    - objective ...

The instructor guide builds its table from these headers and the tests check them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

NOTEBOOK_NAME = re.compile(r"^\d{2}_[a-z0-9_]+\.ipynb$")
_TITLE = re.compile(r"^# (.+)$", re.MULTILINE)
_MINUTES = re.compile(r"\*\*Time:\*\*\s*(\d+)\s*min")
_PREREQUISITES = re.compile(r"\*\*Prerequisites:\*\*\s*(.+)$", re.MULTILINE)  # the rest of the line
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_OBJECTIVES = re.compile(r"^## Learning objectives\s*$(.*?)(?=^#|\Z)", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class NotebookHeader:
    """What a notebook's first cell says about it."""

    path: Path
    title: str
    promise: str
    minutes: int
    prerequisites: str  # as written, Markdown links included
    objectives: tuple[str, ...]

    @property
    def prerequisites_text(self) -> str:
        """The prerequisites with Markdown links reduced to their text, for tables elsewhere."""
        return _LINK.sub(r"\1", self.prerequisites)


def notebook_paths(directory: str | Path) -> list[Path]:
    """The course notebooks in ``directory`` (named NN_topic.ipynb), in course order."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ValueError(f"directory={str(directory)!r} is not a folder")
    return sorted(path for path in directory.iterdir() if NOTEBOOK_NAME.match(path.name))


def read_cells(path: str | Path) -> list[dict]:
    """The cells of the notebook at ``path``, each with its source joined into one string."""
    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    for cell in cells:
        if isinstance(cell["source"], list):
            cell["source"] = "".join(cell["source"])
    return cells


def read_header(path: str | Path) -> NotebookHeader:
    """Parse the first cell of the notebook at ``path``; ValueError names what is missing."""
    path = Path(path)
    cells = read_cells(path)
    if not cells or cells[0]["cell_type"] != "markdown":
        raise ValueError(f"{path.name}: the first cell must be the markdown header")
    text = cells[0]["source"]
    title, minutes, prerequisites, objectives = (
        pattern.search(text) for pattern in (_TITLE, _MINUTES, _PREREQUISITES, _OBJECTIVES)
    )
    missing = [
        name
        for name, found in (("'# Title'", title), ("'**Time:** N min'", minutes),
                            ("'**Prerequisites:**'", prerequisites),
                            ("'## Learning objectives'", objectives))
        if found is None
    ]
    if missing:
        raise ValueError(f"{path.name}: the header cell lacks {', '.join(missing)}")
    after_title = text[title.end():].strip().splitlines()
    bullets = tuple(
        line.strip()[2:].strip() for line in objectives.group(1).splitlines() if line.strip().startswith("- ")
    )
    if not bullets:
        raise ValueError(f"{path.name}: list the learning objectives as '- ' bullets")
    return NotebookHeader(
        path=path,
        title=title.group(1).strip(),
        promise=after_title[0].strip() if after_title else "",
        minutes=int(minutes.group(1)),
        prerequisites=prerequisites.group(1).strip(),
        objectives=bullets,
    )
