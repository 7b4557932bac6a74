"""The API-or-self-hosted calculator of ``lab_utils.widgets`` (notebook 05): the monthly cost of
a model served always on, serverless or per token, with a fine-tune's share (:func:`cost_curves`,
:func:`cost_calculator`)."""

from __future__ import annotations

import functools

from lab_utils import (
    advisor,
    assumptions,
    basics,
    checks,
    economics,
    hardware,
    llms,
    plots,
    prices,
)
from lab_utils.widgets_panel import (
    _BATCHES,
    _config_box,
    _live_panel,
    pasted_model,
)

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
