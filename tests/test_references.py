"""book/references.bib: every entry parses (a merge once left two entries without their closing
brace, and only the website build noticed), and the notebooks and pages cite keys that exist."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIB = ROOT / "book" / "references.bib"


def test_every_entry_of_the_bibliography_parses_once():
    database = pytest.importorskip("pybtex.database")
    entries = database.parse_file(BIB).entries  # raises on a missing brace or a repeated key
    assert len(entries) == len(re.findall(r"^@\w+\{", BIB.read_text(encoding="utf-8"), flags=re.M))


def test_every_cited_key_is_in_the_bibliography():
    keys = set(re.findall(r"^@\w+\{([^,]+),", BIB.read_text(encoding="utf-8"), flags=re.M))
    sources = [*ROOT.glob("notebooks/*.ipynb"), *ROOT.glob("book/*.md")]
    cited = {
        key.strip()
        for path in sources
        for group in re.findall(r"\{cite(?::\w+)?\}`([^`]+)`", path.read_text(encoding="utf-8"))
        for key in group.split(",")
    }
    assert cited - keys == set()
