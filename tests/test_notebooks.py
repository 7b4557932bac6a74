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
    headings = {line.strip() for cell in course.read_cells(path) if cell["cell_type"] == "markdown"
                for line in cell["source"].splitlines() if line.startswith("## ")}
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
    message = re.search(r'raise RuntimeError\((.*?)\)\n', setup, re.DOTALL).group(1)
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
    unchecked_with_outputs = [i for i, c in enumerate(cells) if c["outputs"] and CHECKED_MARK not in c["source"]]
    assert not unchecked_with_outputs, f"clear the outputs of code cells {unchecked_with_outputs}"
    bulky = [o for c in cells for o in c["outputs"]
             if any(mime.startswith(BULKY_MIME_TYPES) for mime in o.get("data", {}))]
    assert not bulky, "images, HTML and widgets are produced when the book builds, not committed"
    assert len(json.dumps([c["outputs"] for c in cells])) <= MAX_STORED_OUTPUT_CHARS


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


# The fold book/_ext/course_site.py removes on the website (sphinx-exercise folds it there).
SOLUTION_FOLD = ('<details class="solution-fold"><summary>Solution (open it after trying)</summary>', "</details>")


@pytest.mark.parametrize("path", [*NOTEBOOKS, TEMPLATE], ids=lambda p: p.name)
def test_every_solution_is_folded_for_jupyterlab_and_colab(path):
    # MyST directives show as plain text in JupyterLab and Colab: an HTML <details> keeps each
    # solution closed there until the learner opens it.
    markdown = "\n".join(c["source"] for c in course.read_cells(path) if c["cell_type"] == "markdown")
    solutions = re.findall(r"^```\{solution\}", markdown, re.MULTILINE)
    folded = re.findall(rf"^{re.escape(SOLUTION_FOLD[0])}\n\n```\{{solution\}}(?:(?!\n```\{{).)*?\n```\n\n"
                        rf"{SOLUTION_FOLD[1]}$", markdown, re.MULTILINE | re.DOTALL)
    assert solutions and len(folded) == len(solutions)


def test_the_website_drops_the_fold_and_keeps_the_solution():
    pytest.importorskip("sphinx")
    from docutils import nodes

    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    import course_site

    assert course_site.SOLUTION_FOLD == SOLUTION_FOLD
    doctree = nodes.section()
    doctree += [nodes.raw("", SOLUTION_FOLD[0], format="html"), nodes.paragraph(text="the solution"),
                nodes.raw("", SOLUTION_FOLD[1], format="html"), nodes.raw("", "</details>", format="html")]
    course_site.drop_solution_folds(None, doctree)
    assert [node.astext() for node in doctree.children] == ["the solution", "</details>"]  # an unpaired one stays


LEARNER_PAGES = [*NOTEBOOKS, *sorted((ROOT / "book").glob("*.md")), ROOT / "README.md"]
INTERNAL_WORD = re.compile(r"\bseed(?:'s|s)?\b(?!\s*[=)(])", re.IGNORECASE)  # the articles the course grew from
RANDOM_SEED = re.compile(r"(random |from a |manual_|_)seed|seed\s*[=:(]", re.IGNORECASE)


@pytest.mark.parametrize("path", LEARNER_PAGES, ids=lambda p: p.name)
def test_learners_never_read_the_word_seed(path):
    """An article is named by its title, publisher and date; 'seed' is kept for random seeds."""
    text = (json.dumps([c["source"] for c in course.read_cells(path)]) if path.suffix == ".ipynb"
            else path.read_text(encoding="utf-8"))
    lines = [line for line in text.replace("\\n", "\n").splitlines()
             if INTERNAL_WORD.search(line) and not RANDOM_SEED.search(line)]
    assert lines == []
