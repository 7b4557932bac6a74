"""The notebooks' execution cache (book/_ext/execution_cache.py): emptied whenever the package,
pyproject.toml or constraints.txt change, so a stale output never hides a failure."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import execution_cache  # noqa: E402


@pytest.fixture
def course(tmp_path):
    (tmp_path / "lab_utils" / "data").mkdir(parents=True)
    (tmp_path / "lab_utils" / "memory.py").write_text("X = 1\n")
    (tmp_path / "lab_utils" / "data" / "hardware.toml").write_text("a = 1\n")
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    (tmp_path / "constraints.txt").write_text("torch==2.13.0\n")
    (tmp_path / "_config.yml").write_text("execute:\n  cache: _build/.jupyter_cache\n")
    return tmp_path


@pytest.mark.parametrize(
    "changed",
    [
        "lab_utils/memory.py",
        "lab_utils/data/hardware.toml",
        "pyproject.toml",
        "constraints.txt",
        "lab_utils/new_module.py",
    ],
)
def test_the_key_changes_with_anything_a_notebook_depends_on(course, changed):
    before = execution_cache.course_key(course)
    (course / changed).write_text(
        (course / changed).read_text() + "# edited\n" if (course / changed).exists() else "Y = 2\n"
    )
    assert execution_cache.course_key(course) != before


def test_the_key_ignores_bytecode_and_notebook_checkpoints(course):
    before = execution_cache.course_key(course)
    (course / "lab_utils" / "__pycache__").mkdir()
    (course / "lab_utils" / "__pycache__" / "memory.cpython-311.pyc").write_bytes(b"\0")
    assert execution_cache.course_key(course) == before


def test_a_changed_package_empties_the_cache_and_an_unchanged_one_keeps_it(course):
    folder = execution_cache.cache_folder(course)
    assert folder == course / "_build" / ".jupyter_cache"
    assert execution_cache.invalidate_if_stale(folder, course) is False  # a new, empty cache
    (folder / "executed.ipynb").write_text("{}")
    assert execution_cache.invalidate_if_stale(folder, course) is False
    assert (folder / "executed.ipynb").exists()
    (course / "constraints.txt").write_text("torch==2.14.0\n")
    assert execution_cache.invalidate_if_stale(folder, course) is True
    assert not (folder / "executed.ipynb").exists()
    assert (folder / execution_cache.KEY_FILE).read_text().strip() == execution_cache.course_key(course)


def test_a_cache_without_a_key_is_emptied(course):
    folder = execution_cache.cache_folder(course)
    folder.mkdir(parents=True)
    (folder / "executed.ipynb").write_text("{}")
    assert execution_cache.invalidate_if_stale(folder, course) is True
    assert not (folder / "executed.ipynb").exists()
