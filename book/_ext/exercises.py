"""Exercises: plain Markdown in the notebooks, sphinx-exercise blocks on the website.

JupyterLab and Colab show MyST directives as grey blocks starting ``:label:``, so a notebook
writes each exercise as Markdown they render, its solution folded in an HTML ``<details>``::

    #### Exercise 2 (10 min)

    The question, with $math$ and `code`.

    <details class="solution-fold"><summary>Solution (open it after trying)</summary>

    The worked answer.

    </details>

When the website is built, :func:`convert_source` (Sphinx's ``source-read``, before myst-nb
parses the notebook) turns each into an ``{exercise}`` block titled with its minutes and a
``{solution}`` dropdown, labelled ``<notebook>-exercise-<N>``. Every exercise states its minutes:
a heading without them is not an exercise (tests/test_notebooks.py checks each heading matches;
the format is lab_utils.course's, which the instructor guide's schedules read too).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from lab_utils.course import EXERCISE  # the notebooks' exercise format, owned there


def to_directives(markdown: str, prefix: str) -> str:
    """``markdown`` with each plain exercise turned into sphinx-exercise blocks.

    The blocks are labelled ``prefix-exercise-N``.
    """

    def directives(match: re.Match) -> str:
        label = f"{prefix}-exercise-{match['number']}"
        return (
            f"````{{exercise}} {match['minutes']} min\n:label: {label}\n\n{match['question']}\n````\n\n"
            f"````{{solution}} {label}\n:class: dropdown\n\n{match['solution']}\n````"
        )

    return EXERCISE.sub(directives, markdown)


def convert_notebook(text: str, prefix: str) -> str:
    """A notebook's JSON text with the exercises of its Markdown cells turned into directives."""
    notebook = json.loads(text)
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") == "markdown":
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            cell["source"] = to_directives(source, prefix)
    return json.dumps(notebook)


def convert_source(app, docname: str, source: list[str]) -> None:
    """Sphinx ``source-read``: convert a notebook's exercises before myst-nb reads it."""
    if Path(app.env.doc2path(docname)).suffix == ".ipynb":
        source[0] = convert_notebook(source[0], Path(docname).name)
