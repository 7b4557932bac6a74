"""Assumptions that cannot rot: every assumption in lab_utils/data/assumptions.toml is read by the
package or a notebook, every command-line option it names exists, and no function default types
an assumption's value instead of taking None for "the assumption"."""

import argparse
import ast
import json
import re
from pathlib import Path

import pytest

from lab_utils import assumptions, cli

ROOT = Path(__file__).resolve().parents[1]


def _notebook_code(path: Path) -> str:
    """The Python of a notebook's code cells: shell and magic lines dropped, ``x = !cmd`` read as
    ``x = None``."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    lines = [
        re.sub(r"=\s*!.*$", "= None", line)
        for cell in cells
        if cell["cell_type"] == "code"
        for line in "".join(cell["source"]).splitlines()
        if not line.lstrip().startswith(("!", "%"))
    ]
    return "\n".join(lines)


def _readers() -> dict[str, str]:
    """The code that may read an assumption: every module of lab_utils and every notebook."""
    found = {
        str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in (ROOT / "lab_utils").rglob("*.py")
    }
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        found[str(path.relative_to(ROOT))] = _notebook_code(path)
    return found


def names_read(source: str) -> tuple[set[str], set[str]]:
    """(names, prefixes) ``source`` reads: every string that could name an assumption
    (``value("mfu")``), the keywords of ``resolve`` calls (``cold_start__restore_s`` is
    ``cold_start.restore_s``), and prefixes (``f"precision.{method}"``, a constant "x.")."""
    names, prefixes = set(), set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            (prefixes if node.value.endswith(".") else names).add(node.value)
        elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            head = str(node.values[0].value).replace("__", ".")
            if head.endswith("."):
                prefixes.add(head)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "resolve"
        ):
            names |= {k.arg.replace("__", ".") for k in node.keywords if k.arg}
    return names, prefixes


def unread(entries, sources) -> list[str]:
    names, prefixes = set(), set()
    for source in sources:
        found, heads = names_read(source)
        names |= found
        prefixes |= heads
    return [
        e.name for e in entries if e.name not in names and not any(e.name.startswith(p) for p in prefixes)
    ]


def test_every_assumption_is_read_by_the_package_or_a_notebook():
    missing = unread(assumptions.catalog(), _readers().values())
    assert not missing, f"assumptions nothing reads (remove them, or read them): {missing}"


def test_the_read_check_catches_an_assumption_nobody_reads():
    planted = [assumptions.Assumption("output_share", 0.25, "why", "course choice", "2026-12", "2026-12")]
    assert unread(planted, ['value("mfu")', "resolve(output_tokens=None)"]) == ["output_share"]
    assert unread(planted, ["resolve(output_share=None)"]) == []
    assert unread(planted, ['x = f"output_{name}"', "y = 'output_share.'"]) == ["output_share"]


def _options(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string of ``parser`` and of its sub-commands, at any depth."""
    found = set()
    for action in parser._actions:
        found |= set(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _options(sub)
    return found


def test_every_option_an_assumption_names_exists():
    options = _options(cli.build_parser())
    named = {
        (entry.name, flag)
        for entry in assumptions.catalog()
        for flag in (entry.option or "").split(" | ")
        if flag
    }
    assert named, "no assumption names an option"
    missing = sorted(f"{name}: {flag}" for name, flag in named if flag not in options)
    assert not missing, f"options named in assumptions.toml that no lab-utils command has: {missing}"
    assert "--output-share" not in options and "--mfu" in options  # the check reads the real parser


def _same(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return a == b


def typed_defaults(source: str, values: dict[str, list]) -> list[str]:
    """Each parameter named as an assumption (its whole name, dots as underscores, or its last
    part: ``restore_s`` for ``cold_start.restore_s``) whose literal default equals its value."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        arguments = node.args
        positional = arguments.posonlyargs + arguments.args
        pairs = list(zip(positional[len(positional) - len(arguments.defaults) :], arguments.defaults))
        pairs += [(a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None]
        for argument, default in pairs:
            if not isinstance(default, ast.Constant) or default.value is None:
                continue
            for name, value in values.get(argument.arg, ()):
                if _same(default.value, value):
                    found.append(f"{node.name}({argument.arg}={default.value!r}) types the {name} assumption")
    return found


def _assumption_values() -> dict[str, list]:
    values = {}
    for entry in assumptions.catalog():
        for key in {entry.name, entry.name.replace(".", "_"), entry.name.rsplit(".", 1)[-1]}:
            values.setdefault(key, []).append((entry.name, entry.value))
    return values


# Parameters that share an assumption's name but are the shape of one call, not a default an
# answer depends on: a formula's batch of one sequence, not the fine-tune's ``batch``.
SHAPES = {"batch"}


def test_no_function_default_types_an_assumptions_value():
    values = {key: pairs for key, pairs in _assumption_values().items() if key not in SHAPES}
    found = [
        f"{path}: {line}"
        for path, source in sorted(_readers().items())
        if path.endswith(".py")
        for line in typed_defaults(source, values)
    ]
    assert not found, "take None for the assumption and resolve it:\n  " + "\n  ".join(found)


def test_the_default_check_catches_a_typed_assumption():
    values = {"mfu": [("mfu", 0.4)], "restore_s": [("cold_start.restore_s", 2.0)]}
    source = "def f(x, mfu=0.4, *, restore_s=2):\n    pass\ndef g(mfu=None, restore_s=3.0):\n    pass\n"
    assert typed_defaults(source, values) == [
        "f(mfu=0.4) types the mfu assumption",
        "f(restore_s=2) types the cold_start.restore_s assumption",
    ]


@pytest.mark.parametrize("name", ["mfu", "precision.lora", "cold_start.restore_s"])
def test_the_read_check_sees_how_the_package_reads(name):
    assert not unread([assumptions.get(name)], _readers().values())
    assert re.fullmatch(r"[a-z0-9_.]+", name)
