"""One formula, one owner: a grep of the package and the notebooks' code for the shapes a formula
takes when someone writes it again instead of asking its owner (CONTRIBUTING.md, "Code").

Each rule names the formula, the pattern its re-derivation takes, and the files that own it. A
hit anywhere else fails, naming the file, the line and the owner to ask instead."""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

RULES = {
    "FLOPs per parameter (2N, 4N, 6N): economics.training_flops": (
        r"\b[246]\.?0?\s*\*\s*[\w.]*(n_params|params_per_token)\b",
        {
            "lab_utils/economics_flops.py",
            "lab_utils/economics_fine_tune.py",  # ZeRO-Offload's CPU Adam and its transfers
            "lab_utils/memory.py",
            "lab_utils/memory_training.py",
            "lab_utils/memory_jobs.py",
        },
        # memory: bytes per parameter, its own
        "",
    ),
    "dollars per million tokens: prices.usd_per_million_tokens, economics.api_cost": (
        r"(usd|price)\w*\s*[*/]\s*1e6|[*/]\s*1e6\s*\*?\s*[\w.]*(usd|price)",
        {"lab_utils/prices.py", "lab_utils/economics.py", "lab_utils/bills.py"},
        "",
    ),
    "bytes per value: basics.bytes_per_value, basics.weight_bytes": (
        r"BYTES_PER_VALUE\[",
        {"lab_utils/basics.py"},
        "",
    ),
    "a device's peak in its compute dtype: basics.peak_flops": (
        r"\.peak_flops\[",
        {"lab_utils/basics.py", "lab_utils/hardware.py"},
        "lab_utils/",  # a notebook may print a catalog peak in the dtype it names
    ),
    "the dtype a device computes in: assumptions.compute_dtype (through basics.peak_flops)": (
        r"DTYPE_PREFERENCE|\(\"bf16\", \"fp16\", \"fp32\"\)",
        set(),
        "lab_utils/",
    ),
    "the monthly always-on bill: basics.always_on_per_month_usd": (
        r"HOURS_PER_MONTH\s*\*\s*[\w.]*usd|usd\w*\s*\*\s*[\w.]*HOURS_PER_MONTH",
        {"lab_utils/basics.py"},
        "",
    ),
    "a fine-tune spread over months: basics.per_month_usd": (
        r"/\s*[\w.(\"']*amortize_months",
        {"lab_utils/basics.py"},
        "",
    ),
    "whole servers beyond one: basics.whole_servers": (
        r"ceil\([^)]*/\s*[\w.\[\]\"]*(max_devices|per_node|per_server)",
        {"lab_utils/basics.py"},
        "",
    ),
    "None means an efficiency of 1: basics.engine_efficiency": (
        r"1\.0 if [\w.]*efficiency is None",
        {"lab_utils/basics.py"},
        "",
    ),
}
"""formula and owner -> (pattern of its re-derivation, files allowed to hold it: the owner's, the
part of the repository searched: "" everything, "lab_utils/" the package)."""

PENDING = {
    ("lab_utils/serving_bounds.py", "a device's peak in its compute dtype: basics.peak_flops"),
    ("lab_utils/serving_bounds.py", "FLOPs per parameter (2N, 4N, 6N): economics.training_flops"),
    # offload's prefill counts each device's share of the layers as serving's prefill counts the
    # whole model (economics sits above both); one owner once basics has a prefill kernel
    ("lab_utils/offload.py", "FLOPs per parameter (2N, 4N, 6N): economics.training_flops"),
}
"""Known re-derivations in serving's prefill and decode steps, which branch moe rewrites per layer;
each must still be there (a test below), so the list shrinks when they go."""


def _sources():
    """(path relative to the repository, line number, line) of the package and the notebooks' code."""
    for path in sorted((ROOT / "lab_utils").rglob("*.py")):
        if "data" in path.relative_to(ROOT / "lab_utils").parts:
            continue  # scripts run on a pod, not the calculators
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            yield path.relative_to(ROOT).as_posix(), number, line
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for index, cell in enumerate(cells):
            if cell["cell_type"] == "code":
                for line in "".join(cell["source"]).splitlines():
                    yield path.relative_to(ROOT).as_posix(), f"cell {index}", line


def hits(rule: str, sources) -> list[str]:
    pattern, owners, scope = RULES[rule]
    pending = {path for path, name in PENDING if name == rule}
    found = []
    for path, where, line in sources:
        code = line.split("#", 1)[0]
        if path.startswith(scope) and path not in owners | pending and re.search(pattern, code):
            found.append(f"{path}:{where}: {line.strip()}")
    return found


@pytest.mark.parametrize("rule", sorted(RULES))
def test_no_formula_is_written_again_outside_its_owner(rule):
    found = hits(rule, _sources())
    assert not found, f"{rule}: ask the owner instead of writing it again:\n  " + "\n  ".join(found)


@pytest.mark.parametrize("path, rule", sorted(PENDING))
def test_the_pending_exceptions_still_exist(path, rule):
    pattern = RULES[rule][0]
    text = (ROOT / path).read_text(encoding="utf-8")
    assert re.search(pattern, text), (
        f"{path} no longer writes {rule!r}: remove it from PENDING and RULES' owners"
    )


@pytest.mark.parametrize(
    "rule, line",
    [
        ("FLOPs per parameter (2N, 4N, 6N): economics.training_flops", "flops = 2 * config.params_per_token"),
        (
            "bytes per value: basics.bytes_per_value, basics.weight_bytes",
            'w = n * memory.BYTES_PER_VALUE["int4"]',
        ),
        (
            "dollars per million tokens: prices.usd_per_million_tokens, economics.api_cost",
            "usd = tokens / 1e6 * price",
        ),
        (
            "the monthly always-on bill: basics.always_on_per_month_usd",
            "bill = price.usd_per_hour * HOURS_PER_MONTH",
        ),
        (
            "a fine-tune spread over months: basics.per_month_usd",
            'f = cost / assumptions.value("amortize_months")',
        ),
        ("whole servers beyond one: basics.whole_servers", "n = math.ceil(n / max_devices) * max_devices"),
        (
            "None means an efficiency of 1: basics.engine_efficiency",
            "e = 1.0 if args.efficiency is None else 2",
        ),
        ("a device's peak in its compute dtype: basics.peak_flops", 'peak = spec.peak_flops["bf16"]'),
    ],
)
def test_the_grep_catches_a_planted_re_derivation(rule, line):
    assert hits(rule, [("lab_utils/planted.py", 1, line)])
