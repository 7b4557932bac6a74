"""The package's four layers, enforced: data, calculators, measuring, faces (CONTRIBUTING.md).

Each module imports only from its own layer or the layers below it, and the imports between
modules form no cycle. Every import counts, those inside functions included (a lazy import is
still a dependency: it only moves the moment it breaks). A new module must be given a layer here
and in CONTRIBUTING.md's layer map."""

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "lab_utils"

LAYERS = {
    "data": (
        "assumptions",
        "catalogs",
        "checks",
        "course",
        "course_files",
        "hardware",
        "interconnects",
        "hf_config",
        "llm_layers",
        "llms",
        "lookup",
        "prices",
        "reference",
        "units",
    ),
    "calculators": (
        "advisor",
        "advisor_options",
        "advisor_runs",
        "advisor_serve_job",
        "advisor_serve_serverless",
        "advisor_serve_servers",
        "advisor_serving",
        "arrivals",
        "basics",
        "bills",
        "comms",
        "economics",
        "economics_fine_tune",
        "economics_flops",
        "economics_run",
        "energy",
        "engines",
        "memory",
        "memory_jobs",
        "memory_llm",
        "memory_training",
        "offload",
        "parallel",
        "published",
        "replica",
        "replica_steps",
        "roofline",
        "routing",
        "scheduler",
        "serverless",
        "serving",
        "serving_bounds",
        "serving_estimate",
        "splits",
        "splits_formulas",
        "splits_plan",
    ),
    "measuring": (
        "batching",
        "bench",
        "bench_cases",
        "bench_results",
        "distributed",
        "distributed_rank",
        "energy_measure",
        "latency",
        "llm_measure",
        "local_worker",
        "machine",
        "memory_measure",
        "models",
        "profiling",
        "threads",
        "timing",
        "torch_compat",
        "training",
    ),
    "faces": (
        "__main__",
        "answers",
        "cli",
        "plots",
        "widgets",
        "widgets_cost",
        "widgets_hardware",
        "widgets_panel",
    ),
}
"""Layer of every module, lowest first. Data: the catalogs in lab_utils/data and the modules that
read them, with the checks and formatting everything shares. Calculators: pure arithmetic. Measuring:
torch and the clock, imported inside functions. Faces: what people see (command line, widgets, plots).
A subpackage (``cli``) is one entry: every module in it takes its layer."""

CALCULATOR_ORDER = (
    "basics",
    "energy",
    "engines",
    "bills",
    "memory_training",
    "memory_llm",
    "memory_jobs",
    "memory",
    "roofline",
    "comms",
    "routing",
    "parallel",
    "splits_formulas",
    "splits_plan",
    "splits",
    "arrivals",
    "serverless",
    "serving_bounds",
    "serving_estimate",
    "serving",
    "offload",
    "scheduler",
    "replica_steps",
    "replica",
    "economics_flops",
    "economics_run",
    "economics_fine_tune",
    "economics",
    "advisor_options",
    "advisor_serve_job",
    "advisor_serve_servers",
    "advisor_serve_serverless",
    "advisor_runs",
    "advisor_serving",
    "advisor",
    "published",
)
"""The order inside the calculator layer, lowest first: each calculator imports only those before
it. ``basics`` (the shared kernels) at the bottom, imports no other calculator; the advisor
composes near the top, and ``published`` holds the course's figures against published ones."""

RANK = {module: rank for rank, modules in enumerate(LAYERS.values()) for module in modules}
NAMES = tuple(LAYERS)


def rank(module: str) -> int | None:
    """The layer of ``module`` (``cli.memory``: the layer of the package ``cli``), None when it has none."""
    return RANK.get(module.split(".")[0])


def imports_of(source: str) -> set[str]:
    """The lab_utils modules ``source`` imports, anywhere in it (functions included)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "lab_utils":
                found |= {alias.name for alias in node.names}
            elif node.module.startswith("lab_utils."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {alias.name.split(".")[1] for alias in node.names if alias.name.startswith("lab_utils.")}
    return found


def graph(sources: dict[str, str]) -> dict[str, set[str]]:
    return {module: imports_of(source) - {module, module.split(".")[0]} for module, source in sources.items()}


def upward(edges: dict[str, set[str]]) -> list[str]:
    """Each import from a lower layer to a higher one, as 'a (layer) imports b (layer)'."""
    return sorted(
        f"{a} ({NAMES[rank(a)]}) imports {b} ({NAMES[rank(b)]})"
        for a, targets in edges.items()
        for b in targets
        if rank(b) is not None and rank(b) > rank(a)
    )


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected set of modules that import each other (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                members.append(member)
                if member == node:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def _package_sources() -> dict[str, str]:
    """Every module of the package by name: ``memory``, and in a subpackage (a folder with an
    ``__init__.py``; lab_utils/data's scripts are files, not modules) ``cli`` (its ``__init__``)
    and ``cli.memory``. An import of any of a subpackage's modules counts as an import of the
    subpackage (:func:`imports_of`), so its modules may import each other."""
    sources = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        folders = path.relative_to(PACKAGE).parents
        if not all((PACKAGE / folder / "__init__.py").is_file() for folder in folders):
            continue
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts:
            sources[".".join(parts)] = path.read_text(encoding="utf-8")
    return sources


def test_every_module_has_a_layer():
    missing = sorted(module for module in _package_sources() if rank(module) is None)
    assert not missing, f"give these modules a layer in tests/test_layers.py and CONTRIBUTING.md: {missing}"


def test_no_module_imports_a_higher_layer():
    crossings = upward(graph(_package_sources()))
    assert not crossings, "imports across layers, upward:\n  " + "\n  ".join(crossings)


def test_the_modules_import_each_other_in_no_cycle():
    found = cycles(graph(_package_sources()))
    assert not found, f"import cycles: {found}"


@pytest.mark.parametrize(
    "planted, expected",
    [
        # an upward import hidden in a function, as the lazy re-exports were
        (
            {"serving": "def f():\n    from lab_utils import plots\n", "plots": ""},
            "serving (calculators) imports plots",
        ),
        (
            {"hardware": "import lab_utils.memory_measure\n", "memory_measure": ""},
            "hardware (data) imports memory_measure",
        ),
    ],
)
def test_the_checks_catch_a_planted_upward_import(planted, expected):
    assert expected in upward(graph(planted))[0]


def test_the_checks_catch_a_planted_cycle():
    planted = {
        "parallel": "def f():\n    from lab_utils import routing\n",
        "routing": "from lab_utils import parallel\n",
    }
    assert cycles(graph(planted)) == [["parallel", "routing"]]


def below_in_order(edges: dict[str, set[str]], order=CALCULATOR_ORDER) -> list[str]:
    """Each import of a calculator by one not above it in ``order``, as 'a imports b (above it)'."""
    place = {module: i for i, module in enumerate(order)}
    return sorted(
        f"{a} imports {b} (above it in CALCULATOR_ORDER)"
        for a, targets in edges.items()
        if a in place
        for b in targets
        if b in place and place[b] >= place[a]
    )


def test_every_calculator_has_a_place_in_the_order():
    calculators = set(LAYERS["calculators"]) & set(_package_sources())
    missing = sorted(calculators - set(CALCULATOR_ORDER))
    assert not missing, f"give these calculators a place in CALCULATOR_ORDER and CONTRIBUTING.md: {missing}"
    assert set(CALCULATOR_ORDER) <= set(LAYERS["calculators"])


def test_each_calculator_imports_only_those_below_it():
    wrong = below_in_order(graph(_package_sources()))
    assert not wrong, "calculators out of order:\n  " + "\n  ".join(wrong)


def test_basics_imports_no_other_calculator():
    edges = graph(_package_sources())
    assert not edges["basics"] & set(LAYERS["calculators"])


def test_the_order_check_catches_a_planted_import_upwards():
    planted = {"basics": "from lab_utils import memory\n", "memory": "from lab_utils import basics\n"}
    assert below_in_order(graph(planted)) == ["basics imports memory (above it in CALCULATOR_ORDER)"]


def test_contributing_shows_the_order_inside_the_calculators():
    """CONTRIBUTING.md's picture lists the calculators row by row, top to bottom: read bottom-up and
    left to right it is CALCULATOR_ORDER."""
    text = (PACKAGE.parent / "CONTRIBUTING.md").read_text(encoding="utf-8")
    picture = text.split("```text", 1)[1].split("```", 1)[0]
    rows = []
    for line in picture.splitlines():
        listed = re.split(r"\s{2,}", line.split("calculators", 1)[-1].lstrip(" |").strip())[0]
        names = [name.strip() for name in listed.split(",")]
        if names and all(name in CALCULATOR_ORDER for name in names):
            rows.append(names)
    assert [name for row in reversed(rows) for name in row] == list(CALCULATOR_ORDER)


def test_the_modules_of_the_cli_package_are_faces():
    sources = _package_sources()
    commands = sorted(module for module in sources if module.startswith("cli."))
    assert {"cli", "cli.common", "cli.memory", "cli.cost"} <= {"cli", *commands}
    assert all(NAMES[rank(module)] == "faces" for module in commands)
    # a command module that imported the measuring layer's module would be fine; a calculator
    # importing a command module is caught like any other upward import
    planted = {"serving": "def f():\n    from lab_utils.cli import memory\n", "cli.memory": ""}
    assert upward(graph(planted)) == ["serving (calculators) imports cli (faces)"]
