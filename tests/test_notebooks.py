"""Every notebook: the template's structure, the shared setup cell, and no bulky outputs.

Executing them is nbval's job (make test-notebooks); these checks read the files only.
"""

import json
import re
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

from lab_utils import course
from lab_utils.catalogs import tomllib

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = course.notebook_paths(ROOT / "notebooks")
TEMPLATE = ROOT / "templates" / "notebook.ipynb"
CHECKED_MARK = "# NBVAL_CHECK_OUTPUT"
MAX_STORED_OUTPUT_CHARS = 2_000  # per notebook: small, deterministic, checked outputs only
BULKY_MIME_TYPES = ("image/", "application/pdf", "text/html", "application/vnd.jupyter.widget-view+json")


def code_cells(path):
    return [cell for cell in course.read_cells(path) if cell["cell_type"] == "code"]


def test_the_course_has_notebooks():
    assert [path.name for path in NOTEBOOKS][:1] == ["00_start_here.ipynb"]


def test_only_course_notebooks_live_in_notebooks():
    stray = [p.name for p in (ROOT / "notebooks").glob("*.ipynb") if not course.NOTEBOOK_NAME.match(p.name)]
    assert not stray, f"name notebooks NN_topic.ipynb (lower case): {stray}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_valid_nbformat(path):
    nbformat.validate(nbformat.read(path, as_version=4))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_has_the_template_structure(path):
    header = course.read_header(path)
    assert header.title.startswith(path.name[:2] + " · "), "title starts with the notebook number"
    assert header.promise, "a one-line promise follows the title"
    assert 5 <= header.minutes <= 180
    assert len(header.objectives) >= 2
    headings = {
        line.strip()
        for cell in course.read_cells(path)
        if cell["cell_type"] == "markdown"
        for line in cell["source"].splitlines()
        if line.startswith("## ")
    }
    assert {"## Exercises", "## Summary"} <= headings


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_first_code_cell_is_the_shared_setup_cell(path):
    assert code_cells(path)[0]["source"] == code_cells(TEMPLATE)[0]["source"]


def test_setup_cell_installs_from_the_configured_repository():
    repository_url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    setup = code_cells(TEMPLATE)[0]["source"]
    # One address, overridable for a test or a fork: COURSE_REPOSITORY in the environment.
    assert f'COURSE_REPOSITORY = os.environ.get("COURSE_REPOSITORY", "{repository_url}")' in setup


def test_setup_cell_keeps_colabs_ipywidgets():
    # Colab ships ipywidgets 7.7 and treats 8 as a third-party widget library: accept both.
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert [d.split(",")[0] for d in dependencies if d.startswith("ipywidgets")] == ["ipywidgets>=7.7"]


def test_setup_cell_fails_with_two_lines_saying_what_to_do():
    setup = code_cells(TEMPLATE)[0]["source"]
    message = re.search(r"raise RuntimeError\((.*?)\)\n", setup, re.DOTALL).group(1)
    assert message.count("\\n") == 1 and "could not install" in message and "run this cell again" in message


def test_setup_cell_installs_the_distribution_pyproject_names():
    # pip checks that the name before "@ git+..." is the name the repository builds, so a cell
    # naming another distribution (PyPI's "lab-utils" is an unrelated project) fails to install.
    name = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"]
    setup = code_cells(TEMPLATE)[0]["source"]
    assert f'COURSE_DISTRIBUTION = "{name}"' in setup
    assert 'f"{COURSE_DISTRIBUTION} @ git+{COURSE_REPOSITORY}"' in setup


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_only_checked_cells_keep_outputs_and_they_are_small(path):
    cells = code_cells(path)
    unchecked_with_outputs = [
        i for i, c in enumerate(cells) if c["outputs"] and CHECKED_MARK not in c["source"]
    ]
    assert not unchecked_with_outputs, f"clear the outputs of code cells {unchecked_with_outputs}"
    bulky = [
        o
        for c in cells
        for o in c["outputs"]
        if any(mime.startswith(BULKY_MIME_TYPES) for mime in o.get("data", {}))
    ]
    assert not bulky, "images, HTML and widgets are produced when the book builds, not committed"
    checked = [c["outputs"] for c in cells if "answers.markdown(" not in c["source"]]  # tests/test_answers.py
    assert len(json.dumps(checked)) <= MAX_STORED_OUTPUT_CHARS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_widget_state_is_stored(path):
    metadata = json.loads(path.read_text(encoding="utf-8"))["metadata"]
    assert "widgets" not in metadata, "widget state (images included) is produced when the book builds"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_checked_cells_store_the_output_nbval_compares(path):
    checked = [c for c in code_cells(path) if CHECKED_MARK in c["source"]]
    assert checked, "mark at least one deterministic cell with # NBVAL_CHECK_OUTPUT"
    assert all(c["outputs"] for c in checked), "run the checked cells and keep their outputs"


def test_every_notebook_is_in_the_table_of_contents():
    toc = (ROOT / "_toc.yml").read_text()
    missing = [p.stem for p in NOTEBOOKS if f"file: notebooks/{p.stem}" not in toc]
    assert not missing, f"add to _toc.yml: {missing}"


def test_read_header_names_what_is_missing(tmp_path):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 99 · Title\n\nA promise.")])
    path = tmp_path / "99_broken.ipynb"
    nbformat.write(notebook, path)
    with pytest.raises(ValueError, match=r"99_broken.ipynb.*\*\*Time:\*\* N min.*Learning objectives"):
        course.read_header(path)


def test_read_header_parses_the_template():
    header = course.read_header(TEMPLATE)
    assert header.prerequisites == "[00 · Start here](00_start_here.ipynb)"
    assert header.prerequisites_text == "00 · Start here"
    assert header.minutes == 45
    assert header.title.startswith("NN · ")
    assert len(header.objectives) == 2


def test_notebook_paths_refuses_a_missing_folder(tmp_path):
    with pytest.raises(ValueError, match="directory"):
        course.notebook_paths(tmp_path / "nowhere")


sys.path.insert(0, str(ROOT / "book" / "_ext"))
import exercises  # noqa: E402  (book/_ext/exercises.py: the website's conversion)

DIRECTIVE = re.compile(r"^(`{3,}|~{3,})\{[\w-]+\}|^:label:", re.MULTILINE)  # MyST syntax Jupyter shows raw


@pytest.mark.parametrize("path", [*NOTEBOOKS, TEMPLATE], ids=lambda p: p.name)
def test_no_cell_shows_a_directive_to_jupyter_and_every_exercise_states_its_minutes(path):
    markdown = [c["source"] for c in course.read_cells(path) if c["cell_type"] == "markdown"]
    shown = [match.group(0) for text in markdown for match in DIRECTIVE.finditer(text)]
    assert shown == [], "write exercises as plain Markdown (book/_ext/exercises.py), not MyST directives"
    found = course.read_exercises(path)
    headings = sum(len(course.EXERCISE_HEADING.findall(text)) for text in markdown)
    assert found and len(found) == headings, (
        "each '#### Exercise N (M min)' needs its question and folded solution"
    )
    assert [e.number for e in found] == list(range(1, len(found) + 1))
    assert all(1 <= e.minutes <= 30 and e.question.strip() and e.solution.strip() for e in found)


def test_the_website_turns_plain_exercises_into_sphinx_exercise_blocks():
    notebook = json.dumps(
        {
            "cells": [
                {
                    "cell_type": "markdown",
                    "metadata": {},
                    "source": [
                        "## Exercises\n",
                        "\n",
                        "#### Exercise 1 (5 min)\n",
                        "\n",
                        "What is $2^3$?\n",
                        "\n",
                        f"{course.SOLUTION_FOLD[0]}\n",
                        "\n",
                        "~~~python\n",
                        "print(2**3)\n",
                        "~~~\n",
                        "\n",
                        f"{course.SOLUTION_FOLD[1]}\n",
                        "\n",
                        "Text after it stays.",
                    ],
                }
            ]
        }
    )
    converted = json.loads(exercises.convert_notebook(notebook, "00_start_here"))["cells"][0]["source"]
    assert converted == (
        "## Exercises\n\n````{exercise} 5 min\n:label: 00_start_here-exercise-1\n\nWhat is $2^3$?\n"
        "````\n\n````{solution} 00_start_here-exercise-1\n:class: dropdown\n\n~~~python\n"
        "print(2**3)\n~~~\n````\n\nText after it stays."
    )


def test_a_strict_sphinx_build_renders_the_converted_exercises(tmp_path):
    """The course's extension in a small strict build (warnings are errors) of one real notebook."""
    pytest.importorskip("sphinx_exercise")
    pytest.importorskip("myst_nb")
    from sphinx.application import Sphinx

    source = tmp_path / "src"
    source.mkdir()
    notebook = nbformat.read(NOTEBOOKS[0], as_version=4)
    notebook.cells = [
        cell for cell in notebook.cells if course.EXERCISE_HEADING.search(cell.source)
    ]  # nothing to run
    nbformat.write(notebook, source / "00_start_here.ipynb")
    (source / "index.md").write_text("# Test\n\n```{toctree}\n00_start_here\n```\n", encoding="utf-8")
    (source / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'book' / '_ext')!r})\n"
        "extensions = ['myst_nb', 'sphinx_exercise', 'exercises_only']\n"
        "myst_enable_extensions = ['dollarmath', 'amsmath', 'colon_fence']\nnb_execution_mode = 'off'\n"
        "suppress_warnings = ['mystnb.unknown_mime_type', 'myst.xref_missing', 'myst.header',"
        " 'toc.not_included']\n",
        encoding="utf-8",
    )
    (source / "exercises_only.py").write_text(
        "import exercises\n\ndef setup(app):\n    app.connect('source-read', exercises.convert_source)\n"
        "    return {'parallel_read_safe': True}\n",
        encoding="utf-8",
    )
    sys.path.insert(0, str(source))
    app = Sphinx(
        str(source),
        str(source),
        str(tmp_path / "html"),
        str(tmp_path / "doctrees"),
        "html",
        warningiserror=True,
        status=None,
        freshenv=True,
    )
    app.build()
    html = (tmp_path / "html" / "00_start_here.html").read_text(encoding="utf-8")
    assert (
        html.count('class="exercise admonition"') == 2
        and html.count('class="solution dropdown admonition"') == 2
    )
    assert "Exercise 2 (5 min)" in html and ":label:" not in html and "solution-fold" not in html


LEARNER_PAGES = [*NOTEBOOKS, *sorted((ROOT / "book").glob("*.md")), ROOT / "README.md"]
INTERNAL_WORD = re.compile(
    r"\bseed(?:'s|s)?\b(?!\s*[=)(])", re.IGNORECASE
)  # the articles the course grew from
RANDOM_SEED = re.compile(r"(random |from a |manual_|_)seed|seed\s*[=:(]", re.IGNORECASE)


@pytest.mark.parametrize("path", LEARNER_PAGES, ids=lambda p: p.name)
def test_learners_never_read_the_word_seed(path):
    """An article is named by its title, publisher and date; 'seed' is kept for random seeds."""
    text = (
        json.dumps([c["source"] for c in course.read_cells(path)])
        if path.suffix == ".ipynb"
        else path.read_text(encoding="utf-8")
    )
    lines = [
        line
        for line in text.replace("\\n", "\n").splitlines()
        if INTERNAL_WORD.search(line) and not RANDOM_SEED.search(line)
    ]
    assert lines == []
