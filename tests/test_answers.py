"""Answers first (issue 39): each notebook opens with its questions, answered for the course's
default setup by the calculators (lab_utils.answers), each linked to the section deriving it;
the intro page lists them all."""

import re
from pathlib import Path

import pytest

from lab_utils import answers, course

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = course.notebook_paths(ROOT / "notebooks")


def headings(path):
    return {
        line[3:].strip()
        for cell in course.read_cells(path)
        if cell["cell_type"] == "markdown"
        for line in cell["source"].splitlines()
        if line.startswith("## ")
    }


def test_every_course_notebook_has_answers():
    assert sorted(answers.NOTEBOOKS) == sorted(path.name[:2] for path in NOTEBOOKS)
    assert all(f"{stem}.ipynb" in {p.name for p in NOTEBOOKS} for stem in answers.NOTEBOOKS.values())


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_header_asks_the_questions_and_the_cell_after_the_setup_answers_them(path):
    number = path.name[:2]
    found = answers.for_notebook(number)
    assert 2 <= len(found) <= 3
    cells = course.read_cells(path)
    header = cells[0]["source"]
    asked = re.findall(r"^\d\. (.+)$", header.split("## Questions", 1)[1].split("## ", 1)[0], re.MULTILINE)
    assert asked == [a.question for a in found], "the header's questions are lab_utils.answers'"
    setup = next(i for i, cell in enumerate(cells) if cell["cell_type"] == "code")
    cell = cells[setup + 1]
    assert cell["cell_type"] == "code" and f'answers.markdown("{number}")' in cell["source"]
    assert cell["source"].startswith("# NBVAL_CHECK_OUTPUT")
    stored = "".join(cell["outputs"][0]["data"]["text/markdown"])
    assert len(stored) <= 1500, "answers first: short answers"
    assert stored == answers.markdown(number), (
        f"{path.name}: the stored answers differ from what the calculators say now: "
        f"run scripts/store_checked_outputs.py notebooks/{path.name}"
    )
    for answer in found:
        assert answer.section in headings(path), f"{path.name}: no section {answer.section!r}"


def test_answers_link_the_sections_by_the_websites_anchors():
    from myst_parser.mdit_to_docutils.base import default_slugify

    for number in answers.NOTEBOOKS:
        for answer in answers.for_notebook(number):
            plain = re.sub(r"`", "", answer.section)  # the anchor is made from the heading's text
            assert answers.slug(answer.section) == default_slugify(plain)
    config = (ROOT / "_config.yml").read_text(encoding="utf-8")
    assert re.search(r"^    myst_heading_anchors: 2\b", config, re.MULTILINE)


def test_dollar_amounts_in_answers_are_not_math():
    text = answers.markdown("05")
    assert "\\$" in text and not re.search(r"(?<!\\)\$", text)


def test_colab_and_a_laptop_each_get_a_served_7b_answer_with_a_sourced_figure_beside_the_bound():
    from lab_utils import engines, hardware

    for device in ("T4", answers.LAPTOP):
        line = answers.serve_7b(device)
        assert "bound" in line and "tokens/s" in line
        engine = answers._engine_for_4bit(hardware.get(device))
        profile = engines.get(engine)
        assert (
            4 in profile.decode_efficiency and "decode_efficiency for 8 and 4 bits" not in profile.unsourced
        )
        source = profile.source_for("decode_efficiency[4]")  # the 4-bit figure's own source
        assert source.source in line and source.source_date in line
    assert "cannot host an endpoint" in answers.COLAB_CANNOT
    intro = (ROOT / "book" / "intro.md").read_text(encoding="utf-8")
    assert "## Questions this course answers" in intro and "answers.serve_7b('T4')" in intro
    assert "answers.COLAB_CANNOT" in intro and "answers.markdown(" in intro


@pytest.mark.parametrize("number", ["09", "10"])
def test_notebooks_without_a_self_check_got_one_right_after_a_concept(number):
    path = next(p for p in NOTEBOOKS if p.name.startswith(number))
    cells = course.read_cells(path)
    exercises = next(i for i, c in enumerate(cells) if c["source"].startswith("## Exercises"))
    check = next(i for i, c in enumerate(cells) if c["source"].startswith("**Self-check.**"))
    assert check < exercises and cells[check + 1]["cell_type"] == "code"
    assert "Self-check passed." in cells[check + 1]["source"]


def test_a_bad_notebook_number_is_refused():
    with pytest.raises(ValueError, match="number='99'"):
        answers.for_notebook("99")
