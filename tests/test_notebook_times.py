"""The build-status page's table (book/_ext/notebook_times.py): each notebook's time read from the
execution cache, matched by the notebook's current code, against the course's targets."""

import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import notebook_times  # noqa: E402


def _notebook(code: str):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return notebook


@pytest.fixture
def course(tmp_path):
    (tmp_path / "_config.yml").write_text("execute:\n  cache: _build/.jupyter_cache\n")
    (tmp_path / "notebooks").mkdir()
    cache = get_cache(str(tmp_path / "_build" / ".jupyter_cache"))
    for name, code, data in [
        ("00_quick.ipynb", "1 + 1", {"execution_seconds": 4.25, "jobs": 1}),
        ("01_slow.ipynb", "2 + 2", {"execution_seconds": 31.0, "jobs": 2}),
        ("02_changed.ipynb", "3 + 3", {"execution_seconds": 5.0, "jobs": 1}),
    ]:
        path = tmp_path / "notebooks" / name
        nbformat.write(_notebook(code), path)
        cache.cache_notebook_bundle(
            CacheBundleIn(_notebook(code), str(path), data=data), check_validity=False
        )
    nbformat.write(_notebook("3 + 4"), tmp_path / "notebooks" / "02_changed.ipynb")  # its cached run is stale
    return tmp_path


def test_each_notebook_time_comes_from_the_cache_matched_by_its_code(course):
    times = {t.name: t for t in notebook_times.cached_times(course)}
    assert times["00_quick.ipynb"].seconds == 4.25 and times["00_quick.ipynb"].jobs == 1
    assert times["01_slow.ipynb"].seconds == 31.0 and times["01_slow.ipynb"].jobs == 2
    assert times["02_changed.ipynb"].seconds is None  # edited since: not executed for this build


def test_the_table_sets_each_time_and_the_total_against_the_targets(course):
    table = notebook_times.rows(notebook_times.cached_times(course))
    assert table[0] == [
        "00_quick.ipynb",
        table[0][1],
        "4.2",
        f"within {notebook_times.NOTEBOOK_TARGET_S} s",
        "alone",
    ]
    assert table[1][2:] == ["31.0", f"over {notebook_times.NOTEBOOK_TARGET_S} s", "2 notebooks at once"]
    assert table[2][2:] == ["-", "not executed", "-"]
    assert table[-1][0] == "all 3, one after another"
    assert table[-1][2] == "-"  # no total while a notebook has no time


def test_a_complete_course_is_totalled(course):
    nbformat.write(_notebook("3 + 3"), course / "notebooks" / "02_changed.ipynb")
    total = notebook_times.rows(notebook_times.cached_times(course))[-1]
    assert total[2:4] == ["40.2", f"within {notebook_times.COURSE_TARGET_S} s"]


def test_the_build_status_page_shows_the_table():
    assert "```{notebook-times}" in (ROOT / "book" / "status.md").read_text(encoding="utf-8")


def test_the_directive_renders_the_table_in_a_sphinx_build(course):
    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace

    (course / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'book' / '_ext')!r})\n"
        "extensions = ['notebook_times']\nexclude_patterns = ['_build', 'notebooks']\n"
    )
    (course / "index.rst").write_text("Status\n======\n\n.. notebook-times::\n")
    with (
        docutils_namespace()
    ):  # the nodes and directives it registers go with it: other builds in this process
        app = Sphinx(
            str(course),
            str(course),
            str(course / "_build" / "html"),
            str(course / "_build" / "doctrees"),
            "html",
            status=None,
            warningiserror=True,
        )
        app.build()
    page = (course / "_build" / "html" / "index.html").read_text(encoding="utf-8")
    assert (
        "01_slow.ipynb" in page
        and f"over {notebook_times.NOTEBOOK_TARGET_S} s" in page
        and "2 notebooks at once" in page
    )
