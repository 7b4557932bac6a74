"""The doors to a runtime: an "Open in Colab" badge on every notebook (and in the README's
list), each pointing to that notebook, and the setup cell folded on the website."""

import importlib.util
import sys
from pathlib import Path

import pytest
import yaml

from lab_utils import course

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))  # a new notebook is found here
TEMPLATE = ROOT / "templates" / "notebook.ipynb"
COLAB = "https://colab.research.google.com/github/"

_spec = importlib.util.spec_from_file_location("colab_badges", ROOT / "scripts" / "colab_badges.py")
colab_badges = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(colab_badges)


def expected_link(path: Path) -> str:
    """The Colab address of ``path``, built here from _config.yml's repository setting."""
    settings = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["repository"]
    owner_name = settings["url"].removeprefix("https://github.com/").removesuffix("/")
    return f"{COLAB}{owner_name}/blob/{settings['branch']}/notebooks/{path.name}"


def test_notebooks_are_found():
    assert [p.name for p in NOTEBOOKS] == [p.name for p in course.notebook_paths(ROOT / "notebooks")]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_header_has_one_badge_that_opens_this_notebook(path):
    cells = course.read_cells(path)
    header = cells[0]["source"]
    links = colab_badges.BADGE.findall(header)
    fix = "run: python scripts/colab_badges.py"
    assert links == [expected_link(path)], fix
    assert not any(colab_badges.BADGE.search(c["source"]) for c in cells[1:]), "one badge, in the header"
    line = next(text for text in header.splitlines() if colab_badges.BADGE.search(text))
    gpu = colab_badges.colab_metadata.wants_gpu(path)
    assert ("Change runtime type > T4 GPU" in line) == gpu, (
        "the GPU-runtime step where the notebook uses a GPU"
    )
    assert not colab_badges.apply(path, write=False), fix


def test_the_readme_lists_every_notebook_with_its_badge():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = readme[readme.index(colab_badges.README_START) : readme.index(colab_badges.README_END)]
    assert colab_badges.BADGE.findall(listed) == [expected_link(p) for p in NOTEBOOKS]
    assert not colab_badges.apply_readme(NOTEBOOKS, write=False), "run: python scripts/colab_badges.py"


def test_a_badge_line_is_replaced_not_added(tmp_path):
    lines = [
        "# NN · Title\n",
        "\n",
        "A promise.\n",
        "\n",
        "**Time:** 5 min · **Prerequisites:** none\n",
        "\n",
        "## Learning objectives\n",
    ]
    once = colab_badges.with_badge(lines, "[![Open In Colab](" + colab_badges.BADGE_IMAGE + ")](x) one\n")
    twice = colab_badges.with_badge(once, "[![Open In Colab](" + colab_badges.BADGE_IMAGE + ")](y) two\n")
    assert twice == [
        *lines[:5],
        "\n",
        "[![Open In Colab](" + colab_badges.BADGE_IMAGE + ")](y) two\n",
        *lines[5:],
    ]
    with pytest.raises(ValueError, match=r"\*\*Time:\*\*"):
        colab_badges.with_badge(["# Title\n"], "badge\n")


def test_only_github_repositories_make_colab_links(monkeypatch):
    monkeypatch.setattr(colab_badges, "repository", lambda: ("https://gitlab.com/a/b", "main"))
    with pytest.raises(ValueError, match="github.com/OWNER/NAME"):
        colab_badges.colab_url(NOTEBOOKS[0])


@pytest.mark.parametrize("path", [*NOTEBOOKS, TEMPLATE], ids=lambda p: p.name)
def test_the_setup_cell_is_folded_on_the_website_with_its_output_shown(path):
    setup = next(c for c in course.read_cells(path) if c["cell_type"] == "code")
    template = next(c for c in course.read_cells(TEMPLATE) if c["cell_type"] == "code")
    assert setup["metadata"] == template["metadata"]
    assert setup["metadata"].get("tags") == ["hide-input"]  # MyST-NB folds the input, shows the output


def test_the_website_drops_the_badge_and_keeps_the_runtime_line():
    pytest.importorskip("sphinx")
    from docutils import nodes

    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    import course_site

    assert course_site.COLAB_BADGE_IMAGE == colab_badges.BADGE_IMAGE
    paragraph = nodes.paragraph()
    link = nodes.reference(refuri=expected_link(NOTEBOOKS[0]))
    link += nodes.image(uri=colab_badges.BADGE_IMAGE, alt="Open In Colab")
    other = nodes.reference(refuri="https://example.org")
    other += nodes.image(uri="figure.png")
    paragraph += [link, nodes.Text(" On Colab ..."), other]
    course_site.drop_colab_badges(None, paragraph)
    assert [type(node) for node in paragraph.children] == [nodes.Text, nodes.reference]
