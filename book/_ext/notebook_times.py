"""Each notebook's execution time, read from the execution cache, against the course's targets.

scripts/run_notebooks.py stores every execution in the cache with its seconds and how many
notebooks ran at once (``execution_seconds``, ``jobs``); the website's build-status page shows
them with the ``notebook-times`` directive (a table, filled in when the page is written, after
every notebook has been executed or taken from the cache). The targets live here, read by
both: the whole course within ``COURSE_TARGET_S`` one notebook after another on a 2-core CPU,
each notebook within ``NOTEBOOK_TARGET_S``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import execution_cache
from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.docutils import SphinxDirective

COURSE_TARGET_S = 100  # the whole course, one notebook after another, on a 2-core CPU
NOTEBOOK_TARGET_S = 20  # each notebook
NOTEBOOKS_GLOB = "notebooks/[0-9][0-9]_*.ipynb"


@dataclass(frozen=True)
class NotebookTime:
    """One notebook's cached execution; ``seconds`` is None when the cache has none for its code."""

    name: str
    seconds: float | None
    jobs: int | None  # notebooks executed at once when it ran (1: the machine to itself)
    executed_utc: str | None  # when, "YYYY-MM-DD HH:MM"


def cached_times(root: Path) -> list[NotebookTime]:
    """The cached execution of every notebook, matched by its current code (as myst-nb matches it)."""
    import nbformat
    from jupyter_cache import get_cache

    folder = execution_cache.cache_folder(root)
    cache = get_cache(str(folder)) if folder.is_dir() else None
    times = []
    for path in sorted(root.glob(NOTEBOOKS_GLOB)):
        record = None
        if cache is not None:
            try:
                record = cache.match_cache_notebook(nbformat.read(path, as_version=4))
            except KeyError:
                pass
        if record is None or "execution_seconds" not in record.data:
            times.append(NotebookTime(path.name, None, None, None))
            continue
        times.append(
            NotebookTime(
                path.name,
                float(record.data["execution_seconds"]),
                record.data.get("jobs"),
                record.created.strftime("%Y-%m-%d %H:%M"),
            )
        )
    return times


def verdict(seconds: float | None, target_s: float) -> str:
    """'within N s', 'over N s', or 'not executed' when there is no time."""
    if seconds is None:
        return "not executed"
    return f"{'within' if seconds <= target_s else 'over'} {target_s} s"


def rows(times: list[NotebookTime]) -> list[list[str]]:
    """The table's rows, a total row last: notebook, executed, seconds, against its target, how."""
    table = []
    for t in times:
        how = "-" if t.jobs is None else ("alone" if t.jobs == 1 else f"{t.jobs} notebooks at once")
        shown = "-" if t.seconds is None else f"{t.seconds:.1f}"
        table.append([t.name, t.executed_utc or "-", shown, verdict(t.seconds, NOTEBOOK_TARGET_S), how])
    measured = [t.seconds for t in times if t.seconds is not None]
    total = sum(measured) if len(measured) == len(times) and times else None
    table.append(
        [
            f"all {len(times)}, one after another",
            "",
            "-" if total is None else f"{total:.1f}",
            verdict(total, COURSE_TARGET_S),
            "",
        ]
    )
    return table


HEADER = ["Notebook", "Executed (UTC)", "Time (s), measured here", "Target", "Ran"]


class NotebookTimesNode(nodes.General, nodes.Element):
    """Placeholder, replaced by the table when the page is written."""


class NotebookTimesDirective(SphinxDirective):
    """``{notebook-times}``: every notebook's time from the execution cache, with the targets."""

    def run(self):
        folder = execution_cache.cache_folder(Path(self.env.srcdir))
        self.env.note_dependency(str(folder / "global.db"))  # re-read whenever a notebook is (re)cached
        return [NotebookTimesNode()]


def _table(body: list[list[str]]) -> nodes.table:
    table = nodes.table(classes=["colwidths-auto"])
    group = nodes.tgroup(cols=len(HEADER))
    table += group
    group += [nodes.colspec(colwidth=1) for _ in HEADER]
    head, rows_node = nodes.thead(), nodes.tbody()
    group += [head, rows_node]
    for parent, cells in [(head, HEADER), *((rows_node, r) for r in body)]:
        row = nodes.row()
        row += [nodes.entry("", nodes.paragraph(text=cell)) for cell in cells]
        parent += row
    return table


class NotebookTimesTransform(SphinxPostTransform):
    """Fill each placeholder from the cache, after every notebook was executed or taken from it."""

    default_priority = 8

    def run(self, **kwargs) -> None:
        for node in list(self.document.findall(NotebookTimesNode)):
            node.replace_self(_table(rows(cached_times(Path(self.env.srcdir)))))


def setup(app) -> None:
    app.add_node(NotebookTimesNode)
    app.add_directive("notebook-times", NotebookTimesDirective)
    app.add_post_transform(NotebookTimesTransform)
