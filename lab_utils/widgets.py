"""Interactive calculators for the notebooks, built on the pure functions of ``lab_utils``.

One function per calculator. Each returns a live ipywidgets panel that redraws its figure as
the learner moves the controls, or, with ``static=True``, the figure for the given inputs
alone (what the website shows, where no kernel runs the widgets). No arithmetic lives here:
every number comes from the module that owns it (``memory``, ``hardware``, ``llms``).
"""

from __future__ import annotations

from itertools import accumulate

from lab_utils import (
    hardware,
    llms,
    memory,
    plots,
)
from lab_utils.units import bytes_in, bytes_label, format_bytes
from lab_utils.widgets_cost import REQUESTS_PER_DAY_GRID, cost_calculator, cost_curves
from lab_utils.widgets_hardware import job_advisor, latency_calculator
from lab_utils.widgets_panel import (
    _BATCHES,
    _PART_COLOURS,
    _SEQ_LENS,
    PASTED_CONFIG,
    _config_box,
    _live_panel,
    pasted_model,
)

__all__ = [  # one module per calculator, named here as one module
    "PASTED_CONFIG",
    "REQUESTS_PER_DAY_GRID",
    "cost_calculator",
    "cost_curves",
    "job_advisor",
    "latency_calculator",
    "memory_calculator",
    "pasted_model",
]


def _memory_figure(model, method, precision, batch, seq_len, recompute, config_json=""):
    """The job's memory, part by part, above a bar per catalog GPU marked fits / does not fit."""
    model = pasted_model(model, config_json)
    estimate = memory.job_estimate(
        model, method=method, precision=precision, batch=batch, seq_len=seq_len, recompute=recompute
    )
    precision, recompute, batch, seq_len = (
        estimate.precision,
        estimate.recompute,
        estimate.batch,
        estimate.seq_len,
    )
    gpus = sorted(hardware.catalog("gpu"), key=lambda spec: spec.memory_bytes)
    reserve = memory.CUDA_CONTEXT_BYTES[1]
    lower_bound = " (lower bound)" if estimate.left_out else ""
    recomputed = "" if method == "inference" else f", {recompute} recompute"
    fig, ax = plots.figure(
        f"{estimate.model}, {method} in {precision}, batch {batch} x {seq_len} tokens{recomputed}: "
        f"{format_bytes(estimate.total_bytes)}{lower_bound}",
        bytes_label("memory"),
        "this job, then each GPU (vendor spec memory)",
        figsize=(9.0, 5.4),
    )
    labels, values = zip(*estimate.parts)
    starts = [0.0, *accumulate(values)][:-1]
    for index, (label, value, start) in enumerate(zip(labels, values, starts)):
        colour = plots.PALETTE[_PART_COLOURS[index % len(_PART_COLOURS)]]
        ax.barh(0, bytes_in(value), left=bytes_in(start), color=colour, label=label)
    rows = ["this job (estimate)"]
    for row, spec in enumerate(gpus, start=1):
        fits = memory.fits(estimate.total_bytes, spec)
        ax.barh(
            row,
            bytes_in(spec.memory_bytes),
            color=plots.PALETTE["green"] if fits else "white",
            edgecolor=plots.PALETTE["green"] if fits else plots.PALETTE["vermillion"],
            hatch=None if fits else "//",
        )
        verdict = "fits" if fits else f"no: {memory.gpus_needed(estimate.total_bytes, spec)}+ GPUs"
        ax.annotate(
            verdict,
            (bytes_in(spec.memory_bytes), row),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize=9,
            bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5},
        )
        rows.append(spec.name)
    ax.axvline(bytes_in(estimate.total_bytes), color=plots.PALETTE["black"], linestyle="--", linewidth=1)
    ax.set_xlim(0, bytes_in(max(estimate.total_bytes, gpus[-1].memory_bytes)) * 1.22)
    ax.set_yticks(range(len(rows)), rows)
    ax.invert_yaxis()
    ax.legend(title="parts of the job", loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=9)
    note = (
        f"fits: estimate <= nominal memory - {format_bytes(reserve)} for the CUDA context. "
        f"'N+ GPUs': the fewest if the job split evenly."
    )
    if estimate.left_out:
        note += f" Not counted (no data): {', '.join(estimate.left_out)}."
    fig.text(0.01, 0.01, note, fontsize=8)
    fig.subplots_adjust(bottom=0.16, left=0.2, right=0.78)
    return fig


def memory_calculator(
    model: str = "Llama-3.1-8B",
    method: str = "inference",
    precision: str | None = None,
    batch: int | None = None,
    seq_len: int | None = None,
    recompute: str | None = None,
    static: bool = False,
    config_json: str = "",
):
    """Will this job fit? The memory of ``memory.job_estimate`` against every catalog GPU.

    Controls: model (``llms.catalog()``), method (inference, full fine-tune, LoRA, QLoRA),
    precision (the ones the method allows), batch, sequence length, activation recomputation,
    and a box to paste a config.json into, which replaces the model (:func:`pasted_model`).
    precision, batch, seq_len and recompute left None are ``memory.job_estimate``'s defaults
    (the assumptions).
    ``static=True`` returns the matplotlib figure for these inputs; otherwise an ipywidgets
    panel starting from them.
    """
    if not isinstance(static, bool):
        raise TypeError(f"static must be True or False, got {static!r}")
    if static:
        return _memory_figure(model, method, precision, batch, seq_len, recompute, config_json)

    import ipywidgets as w

    start = memory.job_estimate(
        pasted_model(model, config_json),
        method=method,
        precision=precision,
        batch=batch,
        seq_len=seq_len,
        recompute=recompute,
    )  # bad starting values fail here, naming the parameter
    precision, recompute, batch, seq_len = start.precision, start.recompute, start.batch, start.seq_len
    controls = {
        "model": w.Dropdown(
            options=[config.name for config in llms.catalog()],
            value=llms.get(model).name,
            description="model",
        ),
        "method": w.Dropdown(options=memory.JOB_METHODS, value=method, description="method"),
        "precision": w.Dropdown(
            options=memory.precisions_for(method), value=precision, description="precision"
        ),
        "batch": w.SelectionSlider(options=sorted({*_BATCHES, batch}), value=batch, description="batch"),
        "seq_len": w.SelectionSlider(
            options=sorted({*_SEQ_LENS, seq_len}), value=seq_len, description="tokens"
        ),
        "recompute": w.Dropdown(options=memory.RECOMPUTE, value=recompute, description="recompute"),
        "config_json": _config_box(config_json),
    }

    def allowed_precisions(change):
        controls["precision"].options = memory.precisions_for(change["new"])

    controls["method"].observe(allowed_precisions, names="value")  # before any redraw
    return _live_panel(
        _memory_figure,
        controls,
        [("model", "method", "precision"), ("batch", "seq_len", "recompute"), ("config_json",)],
    )
