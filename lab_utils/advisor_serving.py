"""The advisor's serving job: :func:`serve` ranks every way to serve a model for a month of
traffic: always-on CPU and GPU servers, serverless GPU workers, and per-token prices.

No arithmetic of its own: memory from ``lab_utils.memory``, speeds from ``lab_utils.serving``
(prefill, decode and batching bounds through an engine's profile), latencies at the learner's
rate from ``lab_utils.replica`` (a replica simulated request by request), serverless workers
from ``lab_utils.serverless`` (simulated arrivals, cold starts, bills; each request's wait for a
worker, to which the replica's time inside a worker is added), the always-on rule and bill from
``lab_utils.basics`` and per-token bills from ``economics.api_cost``. Pure Python: no torch.
"""

from __future__ import annotations

from lab_utils import (
    assumptions,
    basics,
    checks,
    engines,
    hardware,
    llms,
    serving,
)
from lab_utils.advisor_options import (
    Advice,
    catalog_devices,
    checked_cpu_offer,
)
from lab_utils.advisor_serve_job import (
    _SECONDS_PER_DAY,
    _SECONDS_PER_MONTH,
    _ServeJob,
)
from lab_utils.advisor_serve_serverless import _per_token, _serverless
from lab_utils.advisor_serve_servers import _always_on, _hybrid

__all__ = ["serve"]


def serve(
    model,
    requests_per_day,
    *,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    latency_target_s: float | None = None,
    precision: str | None = None,
    batch: int | None = None,
    utilisation: float | None = None,
    efficiency: float | None = None,
    max_devices: int | None = None,
    cpu_offer: str | None = None,
    cold_start_s: float | None = None,
    idle_timeout_s: float | None = None,
    max_workers: int | None = None,
    max_simulated_requests: int | None = None,
    seed: int = 0,
    include_cpus: bool = True,
    devices=None,
    engine: str | None = None,
) -> Advice:
    """Rank the ways to serve ``model`` (an ``llms`` name) for ``requests_per_day`` requests of
    ``input_tokens`` in and ``output_tokens`` out, each within ``latency_target_s``; cost per month.

    Three parts, each asking the calculators: :func:`_always_on` (CPU and GPU servers,
    ``serving`` bounds with continuous batching, billed all month, each latency the p95 of
    ``replica.at_rate`` at the rate per replica), :func:`_serverless` (Runpod flex workers
    running the same engine, ``serverless.simulate`` with cold starts and idle time for the bill
    and each request's wait, the p95 latency adding ``replica.at_rate``'s time inside a worker at
    the rate one busy worker sees: ``serverless.latencies_with_worker_times_s``) and
    :func:`_per_token` (the same open model sold per token by hosting providers,
    and closed models' APIs, listed for comparison: a different product, never the verdict).
    Each GPU is tried at every precision of ``precision`` (default the ``serve_precisions``
    assumption: bf16, fp8, int8, int4) that fits; the cheapest working one is kept, best
    quality first on a tie, and ``Option.precision`` says which (a latency is simulated only
    where it decides that choice). ``devices``: catalog device
    names to consider (always on, and the serverless classes holding one of them); default all.
    Serverless cold starts are ``serverless.cold_start``'s: plain starts, and snapshot restores
    (Runpod FlashBoot) for its hit rate of the starts, unless ``cold_start_s`` gives every start.

    Each device is timed through a serving engine's profile (``lab_utils.engines``): ``engine``
    names one for every device, else each device gets the one practitioners run on it (the
    ``engine`` assumption: vLLM on GPUs, llama.cpp on Apple silicon, the bound on CPUs);
    ``Option.engine`` says which and ``Option.engine_notes`` what it leaves at the bound.
    ``efficiency`` is an extra factor on the engine's times (default 1: the profile alone).

    Every other argument left None is an assumption from ``lab_utils.assumptions`` (not a
    measurement): utilisation ``serve_utilisation``, the cold start's parts ``cold_start.*``,
    and the others under their own names. ValueError when the
    catalog cannot size the model's KV cache (``serving.sizable``).
    """
    given = {name: value for name, value in locals().items() if value is not None}  # as the caller gave them
    if not isinstance(model, (str, llms.LLMConfig)):
        raise TypeError(
            f"model must be a model name from lab_utils.llms, got {type(model).__name__} {model!r}"
        )
    config = llms.as_config(model)
    why = serving.sizable(config)
    if why:
        raise ValueError(f"model={config.name!r}: {why}")
    precisions = [precision] if precision is not None else None
    values, taken = assumptions.resolve(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        latency_target_s=latency_target_s,
        serve_precisions=precisions,
        serve_utilisation=utilisation,
        engine=engine,
        max_devices=max_devices,
        cpu_offer=cpu_offer,
        idle_timeout_s=idle_timeout_s,
        max_workers=max_workers,
        price_bound_load_share=None,
        cold_start_bound_ratio=None,
        max_simulated_requests=max_simulated_requests,
    )
    job = _ServeJob(
        config=config,
        rate_per_s=checks.number("requests_per_day", requests_per_day) / _SECONDS_PER_DAY,
        input_tokens=checks.count("input_tokens", values["input_tokens"], minimum=0),
        output_tokens=checks.count("output_tokens", values["output_tokens"]),
        latency_target_s=checks.number("latency_target_s", values["latency_target_s"]),
        precisions=tuple(
            checks.choice("precision", p, serving.PRECISIONS) for p in values["serve_precisions"]
        ),
        batch=None if batch is None else checks.count("batch", batch),
        utilisation=checks.number("utilisation", values["serve_utilisation"], maximum=1.0),
        efficiency=basics.engine_efficiency(efficiency),
        engine=None if engine is None else engines.get(engine).name,
        max_devices=checks.count("max_devices", values["max_devices"]),
        price_bound_load_share=values["price_bound_load_share"],
        cold_start_bound_ratio=values["cold_start_bound_ratio"],
    )
    cpu_offer = checked_cpu_offer(values["cpu_offer"])
    if cold_start_s is not None:
        cold_start_s = checks.number("cold_start_s", cold_start_s, strict=False)
    simulation = dict(
        idle_timeout_s=checks.number("idle_timeout_s", values["idle_timeout_s"], strict=False),
        max_workers=checks.count("max_workers", values["max_workers"]),
        seed=seed,
        max_simulated_requests=checks.count(
            "max_simulated_requests", values["max_simulated_requests"], minimum=10
        ),
    )
    specs = catalog_devices(include_cpus)
    if devices is not None:
        if isinstance(devices, str) or not all(isinstance(d, (str, hardware.Spec)) for d in devices):
            raise TypeError(f"devices must be a list of catalog device names, got {devices!r}")
        names = {hardware.as_spec(d).name for d in devices}
        specs = tuple(s for s in specs if s.name in names)
    derived = {}
    options = [
        *_always_on(job, specs, cpu_offer),
        *_hybrid(job, specs),
        *_serverless(job, cold_start_s, taken, derived, {s.name for s in specs}, **simulation),
        *_per_token(job),
    ]
    tokens_per_month = job.rate_per_s * job.tokens_per_request * _SECONDS_PER_MONTH
    label = (
        f"serving {config.name}, {requests_per_day:,.0f} requests/day x ({job.input_tokens} in + "
        f"{job.output_tokens} out) tokens = {tokens_per_month:.3g} tokens/month"
    )
    derived["tokens_per_month"] = tokens_per_month
    return Advice.ranking(
        label,
        "month",
        options,
        assumptions=(
            *taken.items(),
            *((name, assumptions.value(name)) for name in ("power_share_of_tdp", "grid_kg_co2e_per_kwh")),
        ),
        given=tuple(given.items()),
        derived=tuple(derived.items()),
    )
