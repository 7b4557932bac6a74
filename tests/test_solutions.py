"""Every solution the notebooks fold away runs, and every self-check can fail and pass.

- Each exercise's solution code (``~~~python`` inside its ``<details class="solution-fold">``)
  compiles, in every notebook.
- A solution that needs only what the notebook imports (and its literal constants, such as
  ``MODEL = "Llama-3.1-8B"``) runs in that context and prints; one that reads a measurement of the
  notebook is left to the slow test of tests/test_pages_ask_the_engine.py, which runs 05's and 08's
  after the whole notebook.
- Each self-check (a Markdown cell starting ``**Self-check``, its code cell next) says "Not yet"
  as the learner finds it, and "Self-check passed." once its folded solution replaces the blank:
  the check can fail, and its solution is right by the engine's figures.
- The figures the words of a solution state (:data:`PROSE`: notebooks 01, 03 and 10 so far; 05's
  and 08's are in tests/test_pages_ask_the_engine.py) are the engine's.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import re
from pathlib import Path

import pytest

from lab_utils import course

NOTEBOOKS = course.notebook_paths(Path(__file__).resolve().parents[1] / "notebooks")

CODE = re.compile(r"~~~python\n(.*?)~~~", re.S)
CHECK_MARK = "# The check: run the cell as it is"


def _code_cells(path) -> list[str]:
    return [c["source"] for c in course.read_cells(path) if c["cell_type"] == "code"]


def _context_source(path) -> str:
    """The notebook's imports and literal constants (top level of each code cell but the setup's)."""
    kept = []
    for source in _code_cells(path)[1:]:
        try:
            tree = ast.parse(source)
        except SyntaxError:  # a cell with IPython syntax (%, !): none of them imports the engine
            continue
        for node in tree.body:
            literal = isinstance(node, ast.Assign) and _is_literal(node.value)
            if isinstance(node, (ast.Import, ast.ImportFrom)) or literal:
                kept.append(ast.unparse(node))
    return "\n".join(kept)


def _is_literal(node) -> bool:
    try:
        ast.literal_eval(node)
    except ValueError:
        return False
    return True


def _free_names(source: str) -> set[str]:
    tree = ast.parse(source)
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    bound |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments) for a in n.args}
    bound |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    bound |= {
        a.asname or a.name.split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names
    }
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return used - bound - set(dir(builtins))


def _run(source: str, space: dict) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, "<solution>", "exec"), space)
    return out.getvalue()


SOLUTIONS = [
    (path, exercise.number, code)
    for path in NOTEBOOKS
    for exercise in course.read_exercises(path)
    for code in CODE.findall(exercise.solution)
]


@pytest.mark.parametrize(
    "path, number, code", SOLUTIONS, ids=[f"{p.stem[:2]}-exercise-{n}" for p, n, _ in SOLUTIONS]
)
def test_every_exercise_solution_compiles(path, number, code):
    compile(code, f"{path.name}, exercise {number}", "exec")


@pytest.fixture(scope="module")
def contexts():
    """notebook path -> (names its imports and literal constants bind, the namespace holding them)."""
    made = {}

    def context(path):
        if path not in made:
            space: dict = {}
            _run(_context_source(path), space)
            made[path] = space
        return made[path]

    return context


@pytest.mark.parametrize(
    "path, number, code", SOLUTIONS, ids=[f"{p.stem[:2]}-exercise-{n}" for p, n, _ in SOLUTIONS]
)
def test_an_exercise_solution_that_needs_only_the_engine_runs_in_its_notebook_and_prints(
    path, number, code, contexts
):
    space = contexts(path)
    missing = _free_names(code) - set(space)
    if missing:
        pytest.skip(f"reads the notebook's own results ({', '.join(sorted(missing))}): the slow test's part")
    printed = _run(code, dict(space))
    assert printed.strip(), f"{path.name}, exercise {number}: the solution prints nothing"


def _self_checks(path):
    """(prompt, check cell source) of each self-check of the notebook at ``path``."""
    cells = course.read_cells(path)
    return [
        (cell["source"], cells[i + 1]["source"])
        for i, cell in enumerate(cells)
        if cell["cell_type"] == "markdown" and cell["source"].startswith("**Self-check")
    ]


SELF_CHECKS = [
    (path, prompt, check) for path in NOTEBOOKS for prompt, check in _self_checks(path) if CHECK_MARK in check
]


def test_every_notebook_has_a_self_check_before_its_exercises():
    """Issue 39: a self-check right after the concept it practises, not only at the end."""
    late = []
    for path in NOTEBOOKS:
        cells = course.read_cells(path)
        exercises = next(
            (i for i, c in enumerate(cells) if re.search(r"^## Exercises", c["source"], re.M)), len(cells)
        )
        if not any(c["source"].startswith("**Self-check") for c in cells[:exercises]):
            late.append(path.name)
    assert not late, f"no self-check before the exercises: {late}"


@pytest.mark.parametrize("path, prompt, check", SELF_CHECKS, ids=[p.stem[:2] for p, _, _ in SELF_CHECKS])
def test_a_self_check_fails_blank_and_passes_with_its_folded_solution(path, prompt, check):
    assert course.SOLUTION_FOLD[0] in prompt and course.SOLUTION_FOLD[1] in prompt
    (solution,) = CODE.findall(prompt)
    blank = _run(check, {})
    assert blank.startswith("Not yet:"), blank
    learner_part, marker, the_check = check.partition(CHECK_MARK)
    imports = "\n".join(line for line in learner_part.splitlines() if line.startswith(("from ", "import ")))
    solved = _run(f"{imports}\n{solution}\n{marker}{the_check}", {})
    assert solved.strip() == "Self-check passed.", solved


# --- the words of a solution state what the engine gives ---------------------------------------


def _amdahl() -> dict:
    """Exercises 1 and 2 of notebook 01: p fitted to a speed-up of 1.6 on two threads, and p = 0.95."""
    from lab_utils import parallel

    p = parallel.fit_parallel_fraction([1, 2], [1.0, 1.6]).parallel_fraction
    return {
        "p": p,
        "limit": parallel.amdahl_limit(p),
        "at 64": parallel.amdahl_speedup(p, 64),
        "at 16": parallel.amdahl_speedup(p, 16),
        "gustafson": parallel.gustafson_speedup(0.95, 64),
        "amdahl": parallel.amdahl_speedup(0.95, 64),
    }


def _llama_70b_long_context() -> dict:
    """Exercise 1 of notebook 03: Llama-3.1-70B in bf16 with 131,072 tokens of KV cache."""
    from lab_utils import llms, memory

    model = llms.get("Llama-3.1-70B")
    shape = {"n_layers": model.n_layers, "n_kv_heads": model.n_kv_heads, "head_dim": model.head_dim}
    job = memory.job_estimate(model, "inference", "bf16", batch=1, seq_len=131072)
    return {
        "per token": memory.kv_cache_bytes(**shape, seq_len=1),
        "kv": memory.kv_cache_bytes(**shape, seq_len=131072),
        "weights": memory.weight_bytes(model.n_params, "bf16"),
        "total": job.total_bytes,
        "h100s": {2: "two", 3: "three", 4: "four"}[memory.gpus_needed(job.total_bytes, "H100 SXM")],
    }


def _fewest_microbatches() -> tuple[int, float]:
    """Exercise 2 of notebook 10: the fewest micro-batches that keep 4 stages' bubble under 10%."""
    from lab_utils import splits

    m = next(m for m in range(1, 1000) if splits.bubble_fraction(4, m) < 0.10)
    return m, splits.bubble_fraction(4, m)


PROSE = {
    ("01", 1): [
        lambda: f"= {_amdahl()['p']:g}$. The limit is $1/(1 - p) = {_amdahl()['limit']:g}$",
        lambda: f"\\approx {_amdahl()['at 64']:.1f}$; already 16 threads give about {_amdahl()['at 16']:.1f}",
    ],
    ("01", 2): [
        lambda: f"Gustafson's {_amdahl()['gustafson']:.2f}x",
        lambda: f"Amdahl's {_amdahl()['amdahl']:.1f}x",
    ],
    ("03", 1): [
        lambda: f"= {_llama_70b_long_context()['per token']:,.0f} bytes",
        lambda: f"{_llama_70b_long_context()['kv'] / 1e9:.0f} GB for 131,072 tokens",
        lambda: (
            f"with {_llama_70b_long_context()['weights'] / 1e9:.0f} GB of weights that is some "
            f"{_llama_70b_long_context()['total'] / 1e9:.0f} GB: {_llama_70b_long_context()['h100s']} H100s"
        ),
    ],
    ("10", 2): [
        lambda: f"{_fewest_microbatches()[0]} micro-batches: 3 / 31 = {_fewest_microbatches()[1]:.1%}",
        lambda: f"{_fewest_microbatches()[0]} micro-batches for 4 stages",
    ],
}
"""(notebook, exercise) -> fragments of its solution's words, written from the engine."""


@pytest.mark.parametrize(
    "notebook, number, index",
    [(nb, n, i) for (nb, n), fragments in PROSE.items() for i in range(len(fragments))],
)
def test_a_solutions_words_state_the_engines_figures(notebook, number, index):
    path = next(p for p in NOTEBOOKS if p.name.startswith(notebook))
    (exercise,) = [e for e in course.read_exercises(path) if e.number == number]
    fragment = PROSE[(notebook, number)][index]()
    assert fragment in " ".join(exercise.solution.split()), (
        f"{path.name}, exercise {number} should say {fragment!r}"
    )
