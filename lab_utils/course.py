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
        for name, found in (
            ("'# Title'", title),
            ("'**Time:** N min'", minutes),
            ("'**Prerequisites:**'", prerequisites),
            ("'## Learning objectives'", objectives),
        )
        if found is None
    ]
    if missing:
        raise ValueError(f"{path.name}: the header cell lacks {', '.join(missing)}")
    after_title = text[title.end() :].strip().splitlines()
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


# --- exercises: plain Markdown in the notebooks (book/_ext/exercises.py turns them into blocks) ---

SOLUTION_FOLD = (
    '<details class="solution-fold"><summary>Solution (open it after trying)</summary>',
    "</details>",
)
EXERCISE_HEADING = re.compile(r"^#### Exercise \d+", re.MULTILINE)
EXERCISE = re.compile(
    r"^#### Exercise (?P<number>\d+) \((?P<minutes>\d+) min\)\n\n(?P<question>.*?)\n\n"
    + re.escape(SOLUTION_FOLD[0])
    + r"\n\n(?P<solution>.*?)\n\n"
    + re.escape(SOLUTION_FOLD[1])
    + "$",
    re.MULTILINE | re.DOTALL,
)


@dataclass(frozen=True)
class Exercise:
    """One exercise of a notebook, as its Markdown writes it (see templates/notebook.ipynb)."""

    number: int
    minutes: int
    question: str
    solution: str


def exercises_in(markdown: str) -> list[Exercise]:
    """The exercises written in one cell's Markdown."""
    return [
        Exercise(int(m["number"]), int(m["minutes"]), m["question"], m["solution"])
        for m in EXERCISE.finditer(markdown)
    ]


def read_exercises(path: str | Path) -> list[Exercise]:
    """The exercises of the notebook at ``path``, in order."""
    return [
        exercise
        for cell in read_cells(path)
        if cell["cell_type"] == "markdown"
        for exercise in exercises_in(cell["source"])
    ]


# --- workshop plans: minutes per section and per day (book/schedule.toml) ----------------------

WHOLE_NOTEBOOK = "the whole notebook"  # the one section of an optional notebook not yet split into sections


@dataclass(frozen=True)
class NotebookPlan:
    """A notebook in class: its sections' minutes, the exercise done in class, what to skip if late."""

    number: str
    sections: tuple[tuple[str, int], ...]
    exercise: Exercise | None  # the one done in class
    skip_if_late: tuple[str, ...]
    optional: bool
    path: Path | None  # None: not in the notebooks folder yet

    @property
    def minutes(self) -> int:
        """Minutes in class: the sections plus the in-class exercise."""
        return sum(minutes for _, minutes in self.sections) + (self.exercise.minutes if self.exercise else 0)

    @property
    def minutes_saved_if_late(self) -> int:
        return sum(minutes for name, minutes in self.sections if name in self.skip_if_late)


def read_plans(
    schedule: str | Path, notebooks: str | Path
) -> tuple[dict[str, NotebookPlan], dict[str, int], dict]:
    """``(notebook plans by number, other blocks' minutes, days)`` of a schedule file (TOML) for
    the notebooks in the folder ``notebooks``; ValueError names an entry that does not add up."""
    from lab_utils.catalogs import tomllib

    with open(schedule, "rb") as file:
        data = tomllib.load(file)
    paths = {path.name[:2]: path for path in notebook_paths(notebooks)}
    plans = {}
    for number, entry in data["notebooks"].items():
        path = paths.get(number)
        chosen = int(entry.get("in_class", 0))
        found = {e.number: e for e in read_exercises(path)} if path else {}
        if path and chosen and chosen not in found:
            raise ValueError(
                f"{schedule}: notebook {number}: in_class={chosen}, but it has exercises {sorted(found)}"
            )
        sections = tuple((str(name), int(minutes)) for name, minutes in entry["sections"])
        unknown = set(entry.get("skip_if_late", ())) - {name for name, _ in sections}
        if unknown:
            raise ValueError(
                f"{schedule}: notebook {number}: skip_if_late names no section: {sorted(unknown)}"
            )
        plans[number] = NotebookPlan(
            number,
            sections,
            found.get(chosen),
            tuple(entry.get("skip_if_late", ())),
            bool(entry.get("optional", False)),
            path,
        )
    blocks = {str(name): int(minutes) for name, minutes in data["blocks"].items()}
    days = {str(name): list(items) for name, items in data["plans"].items()}
    for name, items in days.items():
        unknown = [item for item in items if item not in plans and item not in blocks]
        if unknown:
            raise ValueError(f"{schedule}: plan {name!r} names unknown blocks {unknown}")
    return plans, blocks, days


def day_minutes(
    items: list[str], plans: dict[str, NotebookPlan], blocks: dict[str, int]
) -> list[tuple[str, int, int]]:
    """``(block, start minute, minutes)`` of each block of a day, from minute 0."""
    rows, clock = [], 0
    for item in items:
        minutes = plans[item].minutes if item in plans else blocks[item]
        rows.append((item, clock, minutes))
        clock += minutes
    return rows
