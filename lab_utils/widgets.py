"""Interactive calculators for the notebooks, built on the pure functions of ``lab_utils``.

One function per calculator. Each returns a live ipywidgets panel that redraws its figure as
the learner moves the controls, or, with ``static=True``, the figure for the given inputs
alone (what the website shows, where no kernel runs the widgets). No arithmetic lives here:
every number comes from the module that owns it (``memory``, ``hardware``, ``llms``).
"""

from __future__ import annotations

import functools
from itertools import accumulate

from lab_utils import (
    advisor,
    assumptions,
    basics,
    checks,
    economics,
    engines,
    hardware,
    hf_config,
    llms,
    memory,
    plots,
    prices,
)
from lab_utils.units import bytes_in, bytes_label, format_bytes

_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
_SEQ_LENS = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
_PART_COLOURS = ("blue", "orange", "purple", "vermillion", "sky", "yellow")  # green means "fits"


def _live_panel(draw, controls: dict, rows):
    """An ipywidgets panel: ``controls`` laid out in ``rows`` (lists of their names) above an
    output that shows ``draw(**values)`` again whenever a control changes.

    A ValueError from ``draw`` is printed in place of the figure. The panel keeps the controls
    as ``panel.controls``, for tests and for learners who want to set values from code.
    """
    import ipywidgets as w
    import matplotlib.pyplot as plt
    from IPython.display import display

    output = w.Output()

    def redraw(_change=None):
        with output:
            output.clear_output(wait=True)
            try:
                fig = draw(**{name: control.value for name, control in controls.items()})
            except ValueError as error:  # e.g. a model without the shape a part needs
                print(error)
                return
            display(fig)
            plt.close(fig)

    for control in controls.values():
        control.observe(redraw, names="value")
    redraw()
    panel = w.VBox([*(w.HBox([controls[name] for name in row]) for row in rows), output])
    panel.controls = controls
    return panel


PASTED_CONFIG = "pasted config.json"
"""How the calculators name a config.json pasted into them, in its model's name and its errors."""


def pasted_model(model, config_json: str = ""):
    """The model a calculator draws: the model of ``config_json``, a config.json's text pasted into
    the calculator, when it holds any, else ``model``. The text is read by ``llms.from_hf_config``
    as ``lab-utils --model`` reads a file, so a bad one is the command line's one-line ValueError
    (not JSON, a missing field, an unsupported ``model_type``)."""
    if not isinstance(config_json, str):
        raise TypeError(f"config_json must be a config.json's text, got {type(config_json).__name__}")
    if not config_json.strip():
        return model
    data = hf_config.parse(config_json, PASTED_CONFIG)
    return llms.from_hf_config(data, source=PASTED_CONFIG)


def _config_box(config_json: str):
    """The Textarea a learner pastes a config.json into; it redraws when it loses the focus."""
    import ipywidgets as w

    return w.Textarea(
        value=config_json,
        placeholder="paste a model's config.json here: it replaces the model above (empty: that model)",
        description="config.json",
        continuous_update=False,
        layout=w.Layout(width="95%", height="7em"),
    )


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


# --- API or self-hosted? (notebook 05) ------------------------------------------------------

REQUESTS_PER_DAY_GRID = tuple(10 ** (1 + step / 2) for step in range(11))
"""The traffic the cost calculator asks the advisor about: 10 to 1,000,000 requests a day,
half a decade apart (1,000 and 100,000 among them)."""
_FINE_TUNE_TOKENS = (1e6, 3e6, 1e7, 3e7, 1e8, 3e8, 1e9)


def _requests_grid(requests_per_day_grid) -> tuple[float, ...]:
    """The volumes the calculator asks about: :data:`REQUESTS_PER_DAY_GRID` when None, else the
    given requests per day (each > 0), in increasing order."""
    if requests_per_day_grid is None:
        return REQUESTS_PER_DAY_GRID
    grid = tuple(sorted(set(checks.numbers("requests_per_day_grid", requests_per_day_grid))))
    if not grid:
        raise ValueError("requests_per_day_grid=(): give at least one volume in requests per day")
    return grid


def cost_curves(
    model=None,
    gpu=None,
    api=None,
    *,
    batch=None,
    input_tokens=None,
    output_tokens=None,
    method=None,
    fine_tune_tokens=None,
    mfu=None,
    efficiency=None,
    amortize_months=None,
    requests_per_day_grid=None,
) -> dict:
    """The cost calculator's figures: for each of ``requests_per_day_grid`` (None:
    :data:`REQUESTS_PER_DAY_GRID`; fewer volumes draw faster), the Options of
    ``advisor.serve`` (the one engine, as ``lab-utils pick serve``) for ``gpu`` always on, its
    serverless class (cold starts, restores and idle time simulated) and the per-token prices,
    with the fine-tune (``economics.fine_tune_estimate`` of ``fine_tune_tokens`` by ``method``
    on ``gpu``) spread over ``amortize_months`` added to the two ways that serve your own weights
    (``method="inference"``: the model as published, no fine-tune; "fine_tune" is then None).

    Returns {"lines": {label: [(requests_per_day, Option, usd_per_month), ...]}, "fine_tune":
    FineTuneEstimate, "fine_tune_per_month_usd", "assumptions" (those taken), "model", "gpu",
    "api" (its ApiPrice), "amortize_months", "fine_tune_tokens", "input_tokens", "output_tokens",
    "latency_target_s"}. Left None: model, gpu, method and api are the ``default_model``,
    ``default_gpu``, ``default_method`` and ``compare_api`` assumptions, fine_tune_tokens its own,
    the others the advisor's and the fine-tune's.
    """
    curves = _cost_curves(
        model,
        gpu,
        api,
        batch,
        input_tokens,
        output_tokens,
        method,
        fine_tune_tokens,
        mfu,
        efficiency,
        amortize_months,
        _requests_grid(requests_per_day_grid),
    )
    return {
        **curves,
        "lines": {label: list(points) for label, points in curves["lines"].items()},
        "assumptions": dict(curves["assumptions"]),
    }


@functools.lru_cache(maxsize=32)
def _cost_curves(
    model,
    gpu,
    api,
    batch,
    input_tokens,
    output_tokens,
    method,
    fine_tune_tokens,
    mfu,
    efficiency,
    amortize_months,
    requests_per_day_grid,
) -> dict:
    """:func:`cost_curves`, kept for the panel's redraws (the static figure and the panel's first
    draw ask the same question)."""
    values, taken = assumptions.resolve(
        default_model=model,
        default_gpu=gpu,
        default_method=method,
        compare_api=api,
        amortize_months=amortize_months,
        fine_tune_tokens=fine_tune_tokens,
    )
    fine_tune_tokens = values["fine_tune_tokens"]
    config, spec = llms.resolve(values["default_model"]), hardware.get(values["default_gpu"])
    closed = prices.api_price(values["compare_api"])
    months = values["amortize_months"]
    if values["default_method"] == "inference":  # the model as published: no fine-tune to pay
        fine_tune, fixed = None, 0.0
    else:
        fine_tune = economics.fine_tune_estimate(
            config, fine_tune_tokens, method=values["default_method"], gpu=spec, mfu=mfu
        )
        fixed = basics.per_month_usd(fine_tune.cost_usd or 0.0, months)
    lines: dict[str, list] = {}
    for requests_per_day in requests_per_day_grid:
        advice = advisor.serve(
            config,
            requests_per_day,
            batch=batch,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            efficiency=efficiency,
            devices=[spec.name],
            include_cpus=False,
        )
        chosen = {
            "always on": next((o for o in advice.options if o.kind == "gpu"), None),
            "serverless": next((o for o in advice.options if o.kind == "serverless"), None),
            "per token, same model": advice.cheapest("hosted"),
            f"API: {closed.name}": advice.option(f"API: {closed.name}"),
        }
        for label, option in chosen.items():
            if option is None or option.cost_per_month_usd is None:
                continue
            extra = fixed if option.kind in ("gpu", "serverless") else 0.0
            lines.setdefault(label, []).append((requests_per_day, option, option.cost_per_month_usd + extra))
    taken.update(advice.assumptions)
    shape, _ = assumptions.resolve(
        input_tokens=input_tokens, output_tokens=output_tokens, latency_target_s=None
    )
    return {
        "lines": lines,
        "fine_tune": fine_tune,
        "fine_tune_per_month_usd": fixed,
        "assumptions": taken,
        "model": config.name,
        "gpu": spec.name,
        "api": closed,
        "amortize_months": months,
        "fine_tune_tokens": fine_tune_tokens,
        **shape,
    }


_CURVE_COLOURS = {"always on": "green", "serverless": "orange", "per token, same model": "purple"}


def _cost_figure(
    model,
    gpu,
    api,
    batch,
    method,
    fine_tune_tokens,
    mfu,
    efficiency,
    amortize_months,
    requests_per_day_grid=None,
    config_json="",
):
    """Monthly cost against requests per day from :func:`cost_curves`: filled markers where the
    option meets the latency target, crosses where it does not; the volume from which each way of
    serving your own weights costs no more than the per-token price of the same model marked."""
    curves = cost_curves(
        pasted_model(model, config_json),
        gpu,
        api,
        batch=batch,
        method=method,
        fine_tune_tokens=fine_tune_tokens,
        mfu=mfu,
        efficiency=efficiency,
        amortize_months=amortize_months,
        requests_per_day_grid=requests_per_day_grid,
    )
    closed = curves["api"]
    fig, ax = plots.figure(
        f"{curves['model']}: {curves['gpu']} always on or serverless, per token, or "
        f"{closed.name} ({closed.date_label}; a closed model)",
        "requests per day (requests)",
        "cost per month (US dollars)",
        figsize=(9.0, 5.0),
    )
    for label, points in curves["lines"].items():
        colour = plots.PALETTE[_CURVE_COLOURS.get(label, "blue")]
        volumes, costs = [v for v, _, _ in points], [c for _, _, c in points]
        last = points[-1][1]
        name = label if last.kind == "api" else last.name
        name += " (unverified price)" if last.price_date.endswith("unverified") else ""
        ax.plot(volumes, costs, color=colour, label=name)
        missed = [(v, c) for v, o, c in points if not o.works and o.kind in ("gpu", "serverless")]
        if missed:
            ax.plot(*zip(*missed), linestyle="none", marker="x", color=colour)
    per_token = {v: c for v, _, c in curves["lines"].get("per token, same model", [])}
    for label in ("serverless", "always on"):
        cheaper = [
            v
            for v, o, c in curves["lines"].get(label, [])
            if o.works and v in per_token and c <= per_token[v]
        ]
        if cheaper:
            ax.axvline(cheaper[0], color=plots.PALETTE[_CURVE_COLOURS[label]], linestyle=":", linewidth=1.5)
            ax.annotate(
                f"{label} no dearer than\nper token from {cheaper[0]:,.0f}/day",
                (cheaper[0], 0.02),
                xycoords=("data", "axes fraction"),
                xytext=(4, 0),
                textcoords="offset points",
                fontsize=8,
                color=plots.PALETTE[_CURVE_COLOURS[label]],
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.legend(loc="upper left", fontsize=9)
    fine_tune = curves["fine_tune"]
    own_weights = (
        "Own weights: the model as published, no fine-tune."
        if fine_tune is None
        else f"Own weights include the {fine_tune.method} fine-tune of {curves['fine_tune_tokens']:.0e} "
        f"tokens (${fine_tune.cost_usd or 0:,.2f}) spread over {curves['amortize_months']} months."
    )
    fig.text(
        0.01,
        0.01,
        f"lab_utils.advisor.serve at each volume (as lab-utils pick serve): "
        f"{curves['input_tokens']} tokens in + {curves['output_tokens']} out per request, "
        f"p95 within {curves['latency_target_s']:g} s (x: misses it); "
        f"serverless with cold starts, snapshot restores and idle time simulated. {own_weights} "
        "Estimates from vendor specifications and dated list prices, not measurements.",
        fontsize=8,
        wrap=True,
    )
    fig.subplots_adjust(bottom=0.22)
    return fig


def cost_calculator(
    model: str | None = None,
    gpu: str | None = None,
    api: str | None = None,
    batch: int | None = None,
    method: str | None = None,
    fine_tune_tokens: float | None = None,
    mfu: float | None = None,
    efficiency: float | None = None,
    amortize_months: int | None = None,
    static: bool = False,
    requests_per_day_grid=None,
    config_json: str = "",
):
    """API, per token or self-hosted? Monthly cost against requests per day, every point an answer
    of ``advisor.serve`` (:func:`cost_curves`), so the calculator, ``lab-utils pick serve`` and the
    notebooks give the same figures.

    Controls: model (``llms.catalog()``), GPU (the catalog GPUs with a Runpod serverless price),
    closed API to compare (``prices.api_prices()``), batch ("auto": the advisor's, the largest
    within the latency target), fine-tune method and tokens, MFU of the fine-tune, and an extra
    factor on the serving engine's times (``advisor.serve``'s ``efficiency``; None: 1, the
    engine's profile alone). Left None: model, gpu, method and api are the ``default_model``,
    ``default_gpu``, ``default_method`` and ``compare_api`` assumptions, fine_tune_tokens and
    amortize_months their own, mfu the fine-tune's regime. ``config_json``: a config.json's text
    pasted into the calculator (its box in the panel), which replaces the model (:func:`pasted_model`).
    ``static=True`` returns the matplotlib figure for these inputs; otherwise an ipywidgets panel.
    ``requests_per_day_grid``: the volumes asked about (None: :data:`REQUESTS_PER_DAY_GRID`).
    """
    if not isinstance(static, bool):
        raise TypeError(f"static must be True or False, got {static!r}")
    values, _ = assumptions.resolve(
        default_model=model,
        default_gpu=gpu,
        compare_api=api,
        default_method=method,
        amortize_months=amortize_months,
        fine_tune_tokens=fine_tune_tokens,
    )
    model, gpu, api, method, fine_tune_tokens = (
        values[name]
        for name in ("default_model", "default_gpu", "compare_api", "default_method", "fine_tune_tokens")
    )
    efficiency, amortize_months = basics.engine_efficiency(efficiency), values["amortize_months"]
    if mfu is None:  # the MFU of the fine-tune's regime (economics.mfu_assumption)
        mfu = economics.fine_tune_estimate(
            pasted_model(model, config_json), fine_tune_tokens, method=method, gpu=gpu
        ).mfu
    values = {
        "model": model,
        "gpu": gpu,
        "api": api,
        "batch": batch,
        "method": method,
        "fine_tune_tokens": fine_tune_tokens,
        "mfu": mfu,
        "efficiency": efficiency,
        "amortize_months": amortize_months,
        "config_json": config_json,
    }
    draw = functools.partial(_cost_figure, requests_per_day_grid=_requests_grid(requests_per_day_grid))
    if static:
        return draw(**values)

    import ipywidgets as w
    import matplotlib.pyplot as plt

    plt.close(draw(**values))  # bad starting values fail here, naming the parameter
    gpus = [name for price in prices.serverless_prices() for name in price.gpus]
    controls = {
        "model": w.Dropdown(
            options=[config.name for config in llms.catalog()],
            value=llms.get(model).name,
            description="model",
        ),
        "gpu": w.Dropdown(options=gpus, value=hardware.get(gpu).name, description="GPU"),
        "api": w.Dropdown(
            options=[price.name for price in prices.api_prices() if price.model is None],
            value=prices.api_price(api).name,
            description="closed API",
        ),
        "batch": w.Dropdown(
            options=[("auto", None), *((str(b), b) for b in sorted({*_BATCHES, batch} - {None}))],
            value=batch,
            description="batch",
        ),
        "method": w.Dropdown(options=assumptions.FINE_TUNE_METHODS, value=method, description="fine-tune"),
        "fine_tune_tokens": w.SelectionSlider(
            options=sorted({*_FINE_TUNE_TOKENS, fine_tune_tokens}),
            value=fine_tune_tokens,
            description="FT tokens",
        ),
        "mfu": w.FloatSlider(value=mfu, min=0.05, max=0.8, step=0.05, description="MFU"),
        "efficiency": w.FloatSlider(value=efficiency, min=0.1, max=1.0, step=0.05, description="x engine"),
        "amortize_months": w.IntSlider(value=amortize_months, min=1, max=36, description="months"),
        "config_json": _config_box(config_json),
    }
    names = list(controls)
    return _live_panel(draw, controls, [names[:4], names[4:7], names[7:9], names[9:]])


# --- which hardware for my job? (notebook 08) -----------------------------------------------

_JOB_TOKENS = (1e6, 1e7, 1e8, 1e9, 1e10)
_REQUESTS_PER_DAY = (10, 100, 1_000, 10_000, 100_000, 1_000_000)


def _advisor_figure(job, model, method, n_tokens, requests_per_day, engine=None):
    """``plots.advice_chart`` of the ranking for a fine-tune or a serving job (through ``engine``,
    None: each device's default), the verdict beneath."""
    if job == "fine-tune":
        advice = advisor.fine_tune(model, n_tokens, method=method)
    else:
        advice = advisor.serve(model, requests_per_day, engine=engine)
    fig, _ = plots.advice_chart(advice)
    fig.text(0.01, 0.01, advice.verdict.text(), fontsize=8, wrap=True)
    fig.subplots_adjust(bottom=0.2)
    return fig


def job_advisor(
    job: str = "fine-tune",
    model: str = "Llama-3.1-8B",
    method: str = "lora",
    n_tokens: float = 1e7,
    requests_per_day: float = 1_000,
    engine: str | None = None,
    static: bool = False,
):
    """Which hardware for my job? ``advisor.fine_tune`` or ``advisor.serve`` (their default
    assumptions) drawn as cost against time, one point per working option.

    Controls: job ("fine-tune" or "serve"), model (``llms.catalog()``), fine-tune method and
    tokens, requests per day, the serving engine (``lab_utils.engines``; None: the one
    practitioners run on each device). ``static=True`` returns the matplotlib figure for these inputs;
    otherwise an ipywidgets panel.
    """
    if not isinstance(static, bool):
        raise TypeError(f"static must be True or False, got {static!r}")
    if job not in ("fine-tune", "serve"):
        raise ValueError(f"job={job!r} is not allowed; use 'fine-tune' or 'serve'")
    values = {
        "job": job,
        "model": model,
        "method": method,
        "n_tokens": n_tokens,
        "requests_per_day": requests_per_day,
        "engine": engine,
    }
    if static:
        return _advisor_figure(**values)

    import ipywidgets as w
    import matplotlib.pyplot as plt

    plt.close(_advisor_figure(**values))  # bad starting values fail here, naming the parameter
    controls = {
        "job": w.Dropdown(options=("fine-tune", "serve"), value=job, description="job"),
        "model": w.Dropdown(
            options=[config.name for config in llms.catalog()],
            value=llms.get(model).name,
            description="model",
        ),
        "method": w.Dropdown(options=assumptions.FINE_TUNE_METHODS, value=method, description="method"),
        "n_tokens": w.SelectionSlider(
            options=sorted({*_JOB_TOKENS, n_tokens}), value=n_tokens, description="FT tokens"
        ),
        "requests_per_day": w.SelectionSlider(
            options=sorted({*_REQUESTS_PER_DAY, requests_per_day}),
            value=requests_per_day,
            description="requests/day",
        ),
        "engine": w.Dropdown(
            options=[("per device", None), *((p.name, p.name) for p in engines.catalog())],
            value=None if engine is None else engines.get(engine).name,
            description="engine",
        ),
    }
    return _live_panel(
        _advisor_figure, controls, [("job", "model"), ("method", "n_tokens", "requests_per_day"), ("engine",)]
    )


def latency_calculator(
    model: str = "Llama-3.1-8B",
    gpu: str = "H100 SXM",
    prompt_len: int = 1000,
    output_len: int = 200,
    chunked_prefill: bool | None = None,
    prefix_hit: float | None = None,
    spec_acceptance: float | None = None,
    static: bool = False,
):
    """What users wait on one replica against the request rate: ``replica.at_rate`` (its
    assumptions) at rates from a quarter to twice the steady-state knee (``serving.estimate`` at
    ``serving.max_batch``), drawn as TTFT p99 and TPOT p50/p99 with the SLA targets.

    Controls: model, GPU, prompt and output tokens, chunked prefill, prefix hit rate, and the
    acceptance rate of 3-token n-gram speculative decoding (None: none); ``chunked_prefill`` and
    ``prefix_hit`` None: their assumptions. ``static=True`` returns the matplotlib figure for these
    inputs; otherwise an ipywidgets panel.
    """
    from lab_utils import replica, serving

    levers, _ = assumptions.resolve(chunked_prefill=chunked_prefill, prefix_hit=prefix_hit)
    chunked_prefill, prefix_hit = levers["chunked_prefill"], levers["prefix_hit"]
    if not isinstance(static, bool):
        raise TypeError(f"static must be True or False, got {static!r}")
    shares = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0)

    def draw(model, gpu, prompt_len, output_len, chunked_prefill, prefix_hit, spec_acceptance):
        shape = dict(device=gpu, prompt_len=prompt_len, output_len=output_len)
        room = serving.max_batch(model, device=gpu, context_len=prompt_len + output_len)
        if room < 1:
            raise ValueError(f"model={model!r} does not fit one {gpu}")
        knee = serving.estimate(model, batch=room, **shape).requests_per_s
        spec = dict(spec_tokens=3, spec_acceptance=spec_acceptance) if spec_acceptance is not None else {}
        runs = [
            replica.at_rate(
                model,
                rate_per_s=share * knee,
                n_requests=200,
                chunked_prefill=chunked_prefill,
                prefix_hit=prefix_hit,
                **spec,
                **shape,
            )
            for share in shares
        ]
        fig, ax = plots.figure(
            f"{llms.resolve(model).name} on one {hardware.as_spec(gpu).name} (simulated)",
            "request rate (requests/s)",
            "latency (ms)",
        )
        rates = [share * knee for share in shares]
        ax.plot(rates, [r.ttft.p99 * 1e3 for r in runs], marker="o", label="TTFT p99")
        ax.plot(rates, [r.tpot.p50 * 1e3 for r in runs], marker="s", label="TPOT p50")
        ax.plot(rates, [r.tpot.p99 * 1e3 for r in runs], marker="^", label="TPOT p99")
        ax.axvline(knee, color="grey", linestyle="--", label="steady-state knee")
        ax.axhline(runs[0].slo_ttft_s * 1e3, color="red", linestyle=":", label="TTFT target")
        ax.axhline(runs[0].slo_tpot_s * 1e3, color="orange", linestyle=":", label="TPOT target")
        ax.set_yscale("log")
        ax.legend(fontsize="small")
        return fig

    values = dict(
        model=model,
        gpu=gpu,
        prompt_len=prompt_len,
        output_len=output_len,
        chunked_prefill=chunked_prefill,
        prefix_hit=prefix_hit,
        spec_acceptance=spec_acceptance,
    )
    if static:
        return draw(**values)

    import ipywidgets as w
    import matplotlib.pyplot as plt

    plt.close(draw(**values))  # bad starting values fail here, naming the parameter
    controls = {
        "model": w.Dropdown(
            options=[c.name for c in llms.catalog()], value=llms.resolve(model).name, description="model"
        ),
        "gpu": w.Dropdown(
            options=[s.name for s in hardware.catalog("gpu") if s.bandwidth_bytes_per_s and s.memory_bytes],
            value=hardware.as_spec(gpu).name,
            description="GPU",
        ),
        "prompt_len": w.SelectionSlider(
            options=sorted({250, 500, 1000, 2000, 4000, 8000, prompt_len}),
            value=prompt_len,
            description="prompt",
        ),
        "output_len": w.SelectionSlider(
            options=sorted({50, 100, 200, 500, 1000, output_len}), value=output_len, description="output"
        ),
        "chunked_prefill": w.Checkbox(value=chunked_prefill, description="chunked prefill"),
        "prefix_hit": w.FloatSlider(value=prefix_hit, min=0.0, max=0.95, step=0.05, description="prefix hit"),
        "spec_acceptance": w.Dropdown(
            options=[("no speculation", None), *((f"{a:.0%}", a) for a in (0.3, 0.5, 0.7, 0.9))],
            value=spec_acceptance,
            description="spec. accept",
        ),
    }
    return _live_panel(
        draw,
        controls,
        [
            ("model", "gpu"),
            ("prompt_len", "output_len"),
            ("chunked_prefill", "prefix_hit", "spec_acceptance"),
        ],
    )
