"""The which-hardware calculators of ``lab_utils.widgets``: the advisor's ranking for a job
(:func:`job_advisor`, notebook 08) and a server's latency under load (:func:`latency_calculator`)."""

from __future__ import annotations

from lab_utils import (
    advisor,
    assumptions,
    engines,
    hardware,
    llms,
    plots,
)
from lab_utils.widgets_panel import (
    _live_panel,
)

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
