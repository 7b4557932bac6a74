"""Write the website's page "The course against the world" (book/published.md) from
lab_utils/data/published.toml: every published measurement beside the course's answer for the
same setup, computed now by the calculators (lab_utils.published), with the ratio and its band.

    python scripts/published_page.py            # write book/published.md
    python scripts/published_page.py --check    # exit 1 if the page is out of date

Edit the data file, never the page; tests/test_published.py checks the page is up to date.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lab_utils import published, units

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "book" / "published.md"
AREAS = (
    ("compute", "Compute: matrix products and networks"),
    ("inference", "Inference: LLM servers and one sequence"),
    ("training", "Training throughput"),
    ("memory", "Memory: the longest sequence that fits"),
    ("cold start", "Cold starts"),
    ("energy", "Energy: joules per generated token"),
)


def _value(value: float, unit: str) -> str:
    if unit == "FLOP/s":
        return units.format_rate(value, "FLOP/s")
    if unit == "s":
        return units.format_seconds(value)
    if unit == "bytes":
        return units.format_bytes(value)
    return f"{value:,.0f} {unit}" if value >= 100 else f"{value:.3g} {unit}"


def _status(row: published.Comparison) -> str:
    low, high = row.band
    if row.measurement.expected_miss:
        status = f"known miss: {row.measurement.expected_miss}"
    else:
        status = "within" if row.within else f"**outside {low:.2g}-{high:.2g}**"
    return status if row.measurement.measured else f"{status} (a report, not a measurement: not counted)"


def headline(rows) -> str:
    """The page's count: distinct published figures that were measured, and how many of them the
    course meets (at least one of its answers, a bound or an estimate, within its band)."""
    figures = [group for group in published.distinct_figures(rows) if group[0].measurement.measured]
    met = sum(any(row.within for row in group) for group in figures)
    within = sum(row.within for row in rows)
    reports = sum(not row.measurement.measured for row in rows)
    return (
        f"**Today:** the course meets {met} of the {len(figures)} distinct published figures that "
        "were measured: for each, at least one of its answers for the setup (a bound, or an estimate "
        f"through an engine's profile) lies within its band. The tables hold {len(rows)} rows, "
        f"{len(rows) - len(figures) - reports} of the figures being held against both a bound and an "
        "estimate"
        + (f" and {reports} row being a report that nobody timed (shown, not counted)" if reports else "")
        + f": {within} rows lie within their band, {len(rows) - within} are known misses. All figures "
        "*measured elsewhere* (or reported), on the devices named, at the dates given; the course's "
        "answers are *vendor specification* arithmetic."
    )


def _row(row: published.Comparison) -> str:
    m = row.measurement
    source = f"[{m.title}]({m.url}), {m.source}, {m.source_date} {{cite:p}}`{m.cite}`"
    setup = f"{m.setup}. *{m.note[0].upper()}{m.note[1:]}.*" if m.note else m.setup
    cells = (
        source,
        setup,
        _value(m.figure, m.unit),
        f"{_value(row.course_value, row.course_unit)} ({m.course})",
        f"{row.ratio:.2f}",
        _status(row),
    )
    return "| " + " | ".join(cell.replace("|", "/") for cell in cells) + " |"


def markdown() -> str:
    """The page, as Markdown for Jupyter Book."""
    rows = published.table()
    bands = published.bands()
    lines = [
        "# The course against the world",
        "",
        "Every figure the course computes is a bound or an estimate from datasheets and formulas. "
        "This page holds them against what others measured on real systems: published benchmark "
        "results (MLPerf, TensorRT-LLM's performance overview, llama.cpp, torchtitan, Unsloth), "
        "issue reports and tables, each with its source, date and setup, beside the course's answer "
        "for the same setup. The course's column is computed by "
        "`lab_utils.published` from the calculators when this page is generated "
        "(`python scripts/published_page.py`); nothing in it is typed in.",
        "",
        "**How to read it.** *Ratio* is how optimistic the course is: course / measured for a "
        "throughput or a size, measured / course for a time. A *bound* must not be beaten (ratio at "
        f"least 1) and should not be more than {bands['bound']:.1f}x loose; an *estimate* should land "
        f"within {bands['estimate']:.1f}x either way. A test fails when a row leaves its band; a "
        "*known miss* is a row the course cannot answer well yet, with the reason and the change "
        "that fixes it (its test is an expected failure until then).",
        "",
        headline(rows),
        "",
    ]
    for area, heading in AREAS:
        chosen = [row for row in rows if row.measurement.area == area]
        if not chosen:
            continue
        lines += [
            f"## {heading}",
            "",
            "| measurement | setup | measured | the course says | ratio | status |",
            "|---|---|---|---|---|---|",
            *(_row(row) for row in chosen),
            "",
        ]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if book/published.md is out of date")
    args = parser.parse_args(argv)
    text = markdown()
    if args.check:
        current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
        if current != text:
            print(
                f"{PAGE.relative_to(ROOT)} is out of date: run python scripts/published_page.py",
                file=sys.stderr,
            )
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
