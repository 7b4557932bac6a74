"""The faces of lab_utils.replica agree: notebook 11's checked output is what `lab-utils latency`
prints for the same job, and the widget draws the simulator's answer."""

import json
import shlex
from pathlib import Path

import pytest

from lab_utils import cli, course, widgets

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "11_latency_under_load.ipynb"


def _checked_cli_output() -> str:
    for cell in course.read_cells(NOTEBOOK):
        if cell["cell_type"] == "code" and "lab-utils latency" in "".join(cell["source"]):
            texts = (output.get("text", "") for output in cell["outputs"])
            return "".join("".join(text) if isinstance(text, list) else text for text in texts)
    raise AssertionError("notebook 11 has no cell printing a lab-utils latency command")


def test_notebook_11_prints_what_lab_utils_latency_answers(capsys):
    command, _, printed = _checked_cli_output().partition("\n")
    argv = shlex.split(command)
    assert argv[0] == "lab-utils" and "--json" in argv
    assert cli.main(argv[1:]) == 0
    answered = json.loads(capsys.readouterr().out)
    assert json.loads(printed) == pytest.approx(answered, rel=1e-5, abs=1e-6)  # printed to 6 decimals


def test_the_widget_draws_the_simulated_percentiles():
    import matplotlib.pyplot as plt

    fig = widgets.latency_calculator(prompt_len=500, output_len=100, static=True)
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert {"TTFT p99", "TPOT p50", "TPOT p99"} <= set(labels)
    plt.close(fig)
    with pytest.raises(TypeError, match="static"):
        widgets.latency_calculator(static="yes")
