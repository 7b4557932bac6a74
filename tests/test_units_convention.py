"""One memory unit on every face: decimal GB (10^9 bytes, as GPU datasheets count), binary
units (KiB, MiB, GiB) only on a line that names the tool counting that way (CONTRIBUTING.md,
"Units of memory"; book/glossary.md, "GB and GiB")."""

import json
import re
from pathlib import Path

import pytest

from lab_utils import cli, memory, units, widgets

ROOT = Path(__file__).resolve().parents[1]
BINARY_UNIT = re.compile(r"\b[KMGT]iB\b")
# the tools (and sources) that count in binary units; a line quoting one of their figures names it
TOOLS = re.compile(r"nvidia-smi|PyTorch|torchtune|Linux|vLLM|whitepaper|`du -m`")
# a face never scales bytes itself: these divisions belong to lab_utils.units
OWN_SCALING = re.compile(r"/\s*(2\s*\*\*\s*(10|20|30|40)|1024(\s*\*\*\s*\d)?|1e9|1e6)\b")


def unexplained_binary(lines, where: str) -> list[str]:
    return [
        f"{where}: {line.strip()}" for line in lines if BINARY_UNIT.search(line) and not TOOLS.search(line)
    ]


def notebook_lines(path: Path):
    """Every source line of every cell, and every line of the outputs stored with the notebook."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    for cell in notebook["cells"]:
        yield from "".join(cell["source"]).splitlines()
        for output in cell.get("outputs", []):
            text = output.get("text") or output.get("data", {}).get("text/plain", "")
            yield from "".join(text).splitlines()


NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PAGES = sorted((ROOT / "book").glob("*.md"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebooks_show_memory_in_decimal_units(path):
    assert unexplained_binary(notebook_lines(path), path.name) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebooks_scale_bytes_through_units(path):
    """No notebook divides bytes by 2**20, 2**30 or 1024 itself (units.bytes_in / format_bytes do)."""
    binary_scaling = re.compile(r"/\s*(2\s*\*\*\s*(10|20|30)|1024)\b")
    found = [line.strip() for line in notebook_lines(path) if binary_scaling.search(line)]
    assert found == []


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_book_pages_show_memory_in_decimal_units(path):
    assert unexplained_binary(path.read_text(encoding="utf-8").splitlines(), path.name) == []


@pytest.mark.parametrize("module", [cli, widgets])
def test_faces_leave_byte_scaling_to_units(module):
    source = Path(module.__file__).read_text(encoding="utf-8").splitlines()
    assert [line.strip() for line in source if OWN_SCALING.search(line) and "bytes" in line] == []


@pytest.mark.parametrize(
    "argv",
    [
        ["hardware"],
        ["hardware", "h100"],
        ["hardware", "h200"],
        ["memory", "--model", "mistral-7b-v0.1"],
        ["memory", "--model", "llama-3.1-8b", "--method", "lora"],
        ["memory", "--params", "7e9", "--method", "full"],
        ["memory", "--model", "mistral-7b-v0.1", "--precision", "int8", "--gpu", "T4", "--max-seq-len"],
        ["pick", "fine-tune", "--model", "llama-3.1-8b", "--tokens", "1e8", "--method", "lora"],
    ],
)
def test_the_cli_shows_memory_in_decimal_units(argv, capsys):
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert unexplained_binary(out.splitlines(), " ".join(argv)) == []
    if argv[0] == "memory":  # the table that first shows memory defines the unit
        assert units.bytes_label("memory") in out and "memory (GB = 10^9 bytes)" in out


def test_one_lora_job_reads_the_same_on_every_face(capsys):
    """The job that read 19.4 GiB in one face and 20.8 GB in another: one figure, in GB, everywhere."""
    job = dict(model="Llama-3.1-8B", method="lora", seq_len=4096)
    shown = units.format_bytes(memory.job_estimate(**job).total_bytes)
    assert shown.endswith(" GB")
    assert cli.main(["memory", "--model", "llama-3.1-8b", "--method", "lora", "--seq-len", "4096"]) == 0
    total_line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("total"))
    assert total_line.split()[1:] == shown.split()
    figure = widgets.memory_calculator(**job, static=True)
    axes = figure.axes[0]
    assert axes.get_title().endswith(f": {shown}")
    assert axes.get_xlabel() == "memory (GB = 10^9 bytes)"
    texts = [axes.get_title(), axes.get_xlabel(), axes.get_ylabel(), *(t.get_text() for t in figure.texts)]
    assert unexplained_binary(texts, "memory_calculator") == []


def test_binary_units_only_on_request():
    assert units.format_bytes(16 * 2**30) == "17.2 GB"
    assert units.format_bytes(16 * 2**30, binary=True) == "16.0 GiB"
    with pytest.raises(ValueError, match="unit='GiB'"):
        units.bytes_in(2**30, "GiB")
