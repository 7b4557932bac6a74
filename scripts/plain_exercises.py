"""Rewrite a notebook's sphinx-exercise directives as the plain-Markdown exercises the course uses.

Usage: python scripts/plain_exercises.py notebooks/NN_topic.ipynb [...] [--minutes 10]

For a notebook written with ```{exercise} / ```{solution} blocks (which JupyterLab and Colab
show raw): each becomes "#### Exercise N (M min)", its question, and its solution folded in the
course's <details> lines (lab_utils.course.SOLUTION_FOLD). M is --minutes for every exercise:
edit each heading to its own estimate afterwards. Only the exercise text changes.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lab_utils.course import SOLUTION_FOLD  # noqa: E402

DIRECTIVES = re.compile(
    r"```\{exercise\}[^\n]*\n:label: (?P<label>\S+)\n(?::[^\n]*\n)*\n(?P<question>.*?)\n```\n\n"
    + re.escape(SOLUTION_FOLD[0])
    + r"\n\n```\{solution\} (?P=label)\n(?::[^\n]*\n)*\n(?P<solution>.*?)\n```\n\n"
    + re.escape(SOLUTION_FOLD[1]),
    re.DOTALL,
)


def convert(path: Path, minutes: int) -> int:
    """Rewrite the notebook at ``path`` in place; the number of exercises converted."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    count = 0

    def plain(match: re.Match) -> str:
        nonlocal count
        count += 1
        return (
            f"#### Exercise {count} ({minutes} min)\n\n{match['question']}\n\n{SOLUTION_FOLD[0]}\n\n"
            f"{match['solution']}\n\n{SOLUTION_FOLD[1]}"
        )

    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            source = "".join(cell["source"])
            converted = DIRECTIVES.sub(plain, source)
            if converted != source:
                cell["source"] = converted.splitlines(keepends=True)
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return count


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument(
        "--minutes", type=int, default=10, help="minutes written on every exercise (default 10)"
    )
    args = parser.parse_args(argv)
    for path in args.notebooks:
        print(f"{path}: {convert(path, args.minutes)} exercise(s) converted; check each heading's minutes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
