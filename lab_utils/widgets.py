"""Interactive calculators for the notebooks, built on the pure functions of ``lab_utils``.

One function per calculator. Each returns a live ipywidgets panel that redraws its figure as
the learner moves the controls, or, with ``static=True``, the figure for the given inputs
alone (what the website shows, where no kernel runs the widgets). No arithmetic lives here:
every number comes from the module that owns it (``memory``, ``hardware``, ``llms``).
"""

from __future__ import annotations

from itertools import accumulate

from lab_utils import advisor, assumptions, economics, engines, hardware, llms, memory, plots, prices
from lab_utils.units import bytes_in, bytes_label, format_bytes, format_rate

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


def _memory_figure(model, method, precision, batch, seq_len, recompute):
    """The job's memory, part by part, above a bar per catalog GPU marked fits / does not fit."""
    estimate = memory.job_estimate(model, method=method, precision=precision, batch=batch,
                                   seq_len=seq_len, recompute=recompute)
    precision, recompute, batch, seq_len = estimate.precision, estimate.recompute, estimate.batch, estimate.seq_len
    gpus = sorted(hardware.catalog("gpu"), key=lambda spec: spec.memory_bytes)
    reserve = memory.CUDA_CONTEXT_BYTES[1]
    lower_bound = " (lower bound)" if estimate.left_out else ""
    recomputed = "" if method == "inference" else f", {recompute} recompute"
    fig, ax = plots.figure(
        f"{estimate.model}, {method} in {precision}, batch {batch} x {seq_len} tokens{recomputed}: "
        f"{format_bytes(estimate.total_bytes)}{lower_bound}",
        bytes_label("memory"), "this job, then each GPU (vendor spec memory)",
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
        ax.barh(row, bytes_in(spec.memory_bytes), color=plots.PALETTE["green"] if fits else "white",
                edgecolor=plots.PALETTE["green"] if fits else plots.PALETTE["vermillion"],
                hatch=None if fits else "//")
        verdict = "fits" if fits else f"no: {memory.gpus_needed(estimate.total_bytes, spec)}+ GPUs"
        ax.annotate(verdict, (bytes_in(spec.memory_bytes), row), xytext=(4, 0),
                    textcoords="offset points", va="center", fontsize=9,
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5})
        rows.append(spec.name)
    ax.axvline(bytes_in(estimate.total_bytes), color=plots.PALETTE["black"], linestyle="--", linewidth=1)
    ax.set_xlim(0, bytes_in(max(estimate.total_bytes, gpus[-1].memory_bytes)) * 1.22)
    ax.set_yticks(range(len(rows)), rows)
    ax.invert_yaxis()
    ax.legend(title="parts of the job", loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=9)
    note = (f"fits: estimate <= nominal memory - {format_bytes(reserve)} for the CUDA context. "
            f"'N+ GPUs': the fewest if the job split evenly.")
    if estimate.left_out:
        note += f" Not counted (no data): {', '.join(estimate.left_out)}."
    fig.text(0.01, 0.01, note, fontsize=8)
    fig.subplots_adjust(bottom=0.16, left=0.2, right=0.78)
    return fig


def memory_calculator(model: str = "Llama-3.1-8B", method: str = "inference", precision: str | None = None,
                      batch: int | None = None, seq_len: int | None = None, recompute: str | None = None,
                      static: bool = False):
    """Will this job fit? The memory of ``memory.job_estimate`` against every catalog GPU.

    Controls: model (``llms.catalog()``), method (inference, full fine-tune, LoRA, QLoRA),
    precision (the ones the method allows), batch, sequence length, activation recomputation.
    precision, batch, seq_len and recompute left None are ``memory.job_estimate``'s defaults
    (the assumptions).
    ``static=True`` returns the matplotlib figure for these inputs; otherwise an ipywidgets
    panel starting from them.
    """
    if not isinstance(static, bool):
        raise TypeError(f"static must be True or False, got {static!r}")
    if static:
        return _memory_figure(model, method, precision, batch, seq_len, recompute)

    import ipywidgets as w

    start = memory.job_estimate(model, method=method, precision=precision, batch=batch, seq_len=seq_len,
                                recompute=recompute)  # bad starting values fail here, naming the parameter
    precision, recompute, batch, seq_len = start.precision, start.recompute, start.batch, start.seq_len
    controls = {
        "model": w.Dropdown(options=[config.name for config in llms.catalog()],
                            value=llms.get(model).name, description="model"),
        "method": w.Dropdown(options=memory.JOB_METHODS, value=method, description="method"),
        "precision": w.Dropdown(options=memory.precisions_for(method), value=precision,
                                description="precision"),
        "batch": w.SelectionSlider(options=sorted({*_BATCHES, batch}), value=batch, description="batch"),
        "seq_len": w.SelectionSlider(options=sorted({*_SEQ_LENS, seq_len}), value=seq_len,
                                     description="tokens"),
        "recompute": w.Dropdown(options=memory.RECOMPUTE, value=recompute, description="recompute"),
    }

    def allowed_precisions(change):
        controls["precision"].options = memory.precisions_for(change["new"])

    controls["method"].observe(allowed_precisions, names="value")  # before any redraw
    return _live_panel(_memory_figure, controls,
                       [("model", "method", "precision"), ("batch", "seq_len", "recompute")])


# --- API or self-hosted? (notebook 05) ------------------------------------------------------

_TOKEN_VOLUMES = tuple(10 ** (6 + step / 8) for step in range(41))  # 1M to 100B tokens a month, log-spaced
_FINE_TUNE_TOKENS = (1e6, 3e6, 1e7, 3e7, 1e8, 3e8, 1e9)


def _cost_figure(model, gpu, api, batch, output_share, method, fine_tune_tokens, mfu, efficiency,
                 amortize_months):
    """Monthly cost against monthly tokens: the API, serverless flex (pay per use) and active
    (always on) workers, fine-tune included (priced as ``economics.fine_tune_estimate`` prices
    it: the GPU's cheapest rentable offer), with the break-even volumes marked."""
    setup = economics.serverless_setup(model, gpu, batch=batch, output_share=output_share, efficiency=efficiency)
    api_price = prices.api_price(api)
    api_per_million = economics.blended_price_per_million(
        api_price.input_per_million, api_price.output_per_million, output_share)
    fine_tune = economics.fine_tune_estimate(model, fine_tune_tokens, method=method, gpu=gpu, mfu=mfu)
    kwargs = {"api_cost_per_million": api_per_million, "usd_per_hour": setup.usd_per_hour,
              "tokens_per_s": setup.tokens_per_s, "fine_tune_cost": fine_tune.cost_usd or 0.0,
              "amortize_months": amortize_months, "always_on_usd_per_hour": setup.always_on_usd_per_hour}
    costs = [economics.serving_costs(volume, **kwargs) for volume in _TOKEN_VOLUMES]
    fig, ax = plots.figure(
        f"{setup.model} on {setup.gpus_per_replica} x {setup.gpu} (Runpod serverless, {setup.price.date}) "
        f"vs {api_price.name} ({api_price.date})",
        "tokens per month (tokens)", "cost per month (US dollars)", figsize=(9.0, 5.0))
    lines = (("API", "api_per_month_usd", "blue"), ("self-hosted, pay per use (flex)", "pay_per_use_per_month_usd", "orange"),
             ("self-hosted, always on (active)", "always_on_per_month_usd", "green"))
    for label, field, colour in lines:
        ax.plot(_TOKEN_VOLUMES, [getattr(c, field) for c in costs], label=label, color=plots.PALETTE[colour])
    for always_on, colour in ((False, "orange"), (True, "green")):
        volume = economics.breakeven_tokens_per_month(always_on=always_on, **kwargs)
        if _TOKEN_VOLUMES[0] <= volume <= _TOKEN_VOLUMES[-1]:
            ax.axvline(volume, color=plots.PALETTE[colour], linestyle=":", linewidth=1.5)
            ax.annotate(f"break-even\n{volume:.2g} tokens", (volume, 0.02), xycoords=("data", "axes fraction"),
                        xytext=(4, 0), textcoords="offset points", fontsize=8, color=plots.PALETTE[colour])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.legend(loc="upper left", fontsize=9)
    fig.text(0.01, 0.01,
             f"Self-hosted: {format_rate(setup.tokens_per_s, 'tokens/s')} per replica at batch {batch} "
             f"({efficiency:.0%} of the serving bounds, KV cache included), {output_share:.0%} of tokens generated; "
             f"{method} fine-tune of {fine_tune_tokens:.0e} tokens ${fine_tune.cost_usd or 0:,.2f}, spread over "
             f"{amortize_months} months. Estimates from vendor specifications, not measurements.",
             fontsize=8, wrap=True)
    fig.subplots_adjust(bottom=0.2)
    return fig


def cost_calculator(model: str = "Llama-3.1-8B", gpu: str = "H100 SXM", api: str = "GPT-4o-mini",
                    batch: int | None = None, output_share: float | None = None, method: str = "lora",
                    fine_tune_tokens: float = 1e7, mfu: float | None = None, efficiency: float | None = None,
                    amortize_months: int | None = None, static: bool = False):
    """API or self-hosted? Monthly cost against monthly tokens, from ``lab_utils.economics``.

    Controls: model (``llms.catalog()``), GPU (the catalog GPUs with a Runpod serverless price),
    API (``prices.api_prices()``), batch, share of generated tokens, fine-tune method and
    tokens, MFU, and the fraction of the decode bandwidth bound reached. Left None: batch,
    output_share, efficiency and amortize_months are the assumptions ``serve_batch``,
    ``output_share``, ``decode_efficiency`` and ``amortize_months``, mfu the fine-tune's regime
    (``economics.mfu_assumption``). ``static=True`` returns the matplotlib figure for these
    inputs; otherwise an ipywidgets panel.
    """
    if not isinstance(static, bool):
        raise TypeError(f"static must be True or False, got {static!r}")
    values, _ = assumptions.resolve(serve_batch=batch, output_share=output_share,
                                    decode_efficiency=efficiency, amortize_months=amortize_months)
    batch, output_share = values["serve_batch"], values["output_share"]
    efficiency, amortize_months = values["decode_efficiency"], values["amortize_months"]
    if mfu is None:  # the MFU of the fine-tune's regime (economics.mfu_assumption)
        mfu = economics.fine_tune_estimate(model, fine_tune_tokens, method=method, gpu=gpu).mfu
    values = {"model": model, "gpu": gpu, "api": api, "batch": batch, "output_share": output_share,
              "method": method, "fine_tune_tokens": fine_tune_tokens, "mfu": mfu, "efficiency": efficiency,
              "amortize_months": amortize_months}
    if static:
        return _cost_figure(**values)

    import ipywidgets as w
    import matplotlib.pyplot as plt

    plt.close(_cost_figure(**values))  # bad starting values fail here, naming the parameter
    gpus = [name for price in prices.serverless_prices() for name in price.gpus]
    controls = {
        "model": w.Dropdown(options=[config.name for config in llms.catalog()], value=llms.get(model).name,
                            description="model"),
        "gpu": w.Dropdown(options=gpus, value=hardware.get(gpu).name, description="GPU"),
        "api": w.Dropdown(options=[price.name for price in prices.api_prices()],
                          value=prices.api_price(api).name, description="API"),
        "batch": w.SelectionSlider(options=sorted({*_BATCHES, batch}), value=batch, description="batch"),
        "output_share": w.FloatSlider(value=output_share, min=0.05, max=1.0, step=0.05, description="generated"),
        "method": w.Dropdown(options=("full", "lora", "qlora"), value=method, description="fine-tune"),
        "fine_tune_tokens": w.SelectionSlider(options=sorted({*_FINE_TUNE_TOKENS, fine_tune_tokens}),
                                              value=fine_tune_tokens, description="FT tokens"),
        "mfu": w.FloatSlider(value=mfu, min=0.05, max=0.8, step=0.05, description="MFU"),
        "efficiency": w.FloatSlider(value=efficiency, min=0.1, max=1.0, step=0.05, description="of bound"),
        "amortize_months": w.IntSlider(value=amortize_months, min=1, max=36, description="months"),
    }
    names = list(controls)
    return _live_panel(_cost_figure, controls, [names[:4], names[4:7], names[7:]])


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
    fig.text(0.01, 0.01, advice.verdict, fontsize=8, wrap=True)
    fig.subplots_adjust(bottom=0.2)
    return fig


def job_advisor(job: str = "fine-tune", model: str = "Llama-3.1-8B", method: str = "lora",
                n_tokens: float = 1e7, requests_per_day: float = 1_000, engine: str | None = None,
                static: bool = False):
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
    values = {"job": job, "model": model, "method": method, "n_tokens": n_tokens, "requests_per_day": requests_per_day,
              "engine": engine}
    if static:
        return _advisor_figure(**values)

    import ipywidgets as w
    import matplotlib.pyplot as plt

    plt.close(_advisor_figure(**values))  # bad starting values fail here, naming the parameter
    controls = {
        "job": w.Dropdown(options=("fine-tune", "serve"), value=job, description="job"),
        "model": w.Dropdown(options=[config.name for config in llms.catalog()], value=llms.get(model).name,
                            description="model"),
        "method": w.Dropdown(options=("full", "lora", "qlora"), value=method, description="method"),
        "n_tokens": w.SelectionSlider(options=sorted({*_JOB_TOKENS, n_tokens}), value=n_tokens,
                                      description="FT tokens"),
        "requests_per_day": w.SelectionSlider(options=sorted({*_REQUESTS_PER_DAY, requests_per_day}),
                                              value=requests_per_day, description="requests/day"),
        "engine": w.Dropdown(options=[("per device", None), *((p.name, p.name) for p in engines.catalog())],
                             value=None if engine is None else engines.get(engine).name, description="engine"),
    }
    return _live_panel(_advisor_figure, controls,
                       [("job", "model"), ("method", "n_tokens", "requests_per_day"), ("engine",)])
