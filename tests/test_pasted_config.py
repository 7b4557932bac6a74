"""The memory and cost calculators take a pasted config.json (issue 35, item 1), read as the
command line reads a file: the same model, the same figures, the same one-line error."""

from __future__ import annotations

import json

import pytest

from lab_utils import cli, llms, memory, widgets

SMALL = {
    "model_type": "qwen3",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 24,
    "intermediate_size": 96,
    "vocab_size": 100,
    "torch_dtype": "bfloat16",
}


def _title(fig) -> str:
    return fig.axes[0].get_title()


def test_a_pasted_config_draws_the_model_it_describes():
    text = json.dumps(SMALL, indent=2)
    fig = widgets.memory_calculator(method="lora", config_json=text, static=True)
    estimate = memory.job_estimate(llms.from_hf_config(SMALL), method="lora")
    assert f"{SMALL['model_type']} model" in _title(fig)
    widths = sorted(patch.get_width() for patch in fig.axes[0].patches[: len(estimate.parts)])
    assert widths == pytest.approx(sorted(value / 1e9 for _, value in estimate.parts))


def test_a_catalog_models_published_config_pasted_gives_the_catalogs_figures():
    """Qwen3-8B's config.json (as the catalog stores it) pasted: its memory and its cost curve are
    the catalog model's; an empty box keeps the model chosen above."""
    qwen = llms.get("Qwen3-8B")
    pasted = widgets.pasted_model("Llama-3.1-8B", qwen.config_json)
    assert pasted.n_params == qwen.n_params and pasted.layers == qwen.layers
    assert widgets.pasted_model("Llama-3.1-8B", "  \n") == "Llama-3.1-8B"
    by_name = memory.job_estimate(qwen, method="inference").total_bytes
    assert memory.job_estimate(pasted, method="inference").total_bytes == by_name
    grid = (1_000,)
    named = widgets.cost_curves(qwen, "H100 SXM", method="lora", requests_per_day_grid=grid)
    fig = widgets.cost_calculator(
        gpu="H100 SXM",
        method="lora",
        config_json=qwen.config_json,
        static=True,
        requests_per_day_grid=grid,
    )
    assert _title(fig).startswith(f"{pasted.name}: H100 SXM")  # drawn for the pasted model
    curves = widgets.cost_curves(pasted, "H100 SXM", method="lora", requests_per_day_grid=grid)
    assert curves["lines"].keys() == named["lines"].keys()
    for label, points in named["lines"].items():
        assert [usd for *_, usd in curves["lines"][label]] == pytest.approx([usd for *_, usd in points])


@pytest.mark.parametrize(
    "text",
    [
        '{"model_type": "qwen3", "hidden_size": 64,',  # cut short: not JSON
        "[1, 2]",  # JSON, not an object
        json.dumps({k: v for k, v in SMALL.items() if k != "intermediate_size"}),  # a field missing
        json.dumps({**SMALL, "model_type": "bert"}),  # a model_type the course does not count
    ],
    ids=["not-json", "not-an-object", "missing-field", "unknown-model-type"],
)
def test_a_bad_paste_is_the_command_lines_one_line_error(text, tmp_path, capsys):
    with pytest.raises(ValueError) as pasted:
        widgets.memory_calculator(config_json=text, static=True)
    said = str(pasted.value)
    assert "\n" not in said
    path = tmp_path / "config.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SystemExit) as stopped:
        cli.main(["memory", "--model", str(path)])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert stopped.value.code == 2
    assert said.replace(widgets.PASTED_CONFIG, str(path)) in error  # the same words, its origin named


def test_the_live_panels_box_replaces_the_model_and_prints_a_bad_paste(capsys):
    pytest.importorskip("ipywidgets")
    import matplotlib.pyplot as plt

    for calculator in (
        widgets.memory_calculator,
        lambda: widgets.cost_calculator(requests_per_day_grid=(1_000,)),
    ):
        panel = calculator()
        box = panel.controls["config_json"]
        assert box.value == "" and not box.continuous_update  # a paste redraws once, not per key
        capsys.readouterr()
        box.value = "{not json"
        assert "pasted config.json: not a readable JSON config" in capsys.readouterr().out
        box.value = json.dumps(SMALL)
        assert "not a readable" not in capsys.readouterr().out
    with pytest.raises(TypeError, match="config_json"):
        widgets.pasted_model("Llama-3.1-8B", SMALL)
    plt.close("all")
