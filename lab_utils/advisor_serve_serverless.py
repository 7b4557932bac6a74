"""The advisor's pay-per-use serving options: serverless GPU workers (``lab_utils.serverless``:
simulated arrivals, cold starts) and per-token prices (``economics.api_cost``). Pure Python: no torch.
"""

from __future__ import annotations

from lab_utils import (
    assumptions,
    economics,
    hardware,
    llms,
    memory,
    prices,
    serverless,
    serving,
)
from lab_utils.advisor_options import (
    Option,
    not_possible,
    period_fields,
    price_fields,
)
from lab_utils.advisor_serve_job import (
    _SECONDS_PER_DAY,
    _SECONDS_PER_MONTH,
    _best_precision,
    _kwh,
    _Priced,
    _ServeJob,
)
from lab_utils.units import format_seconds


def _serverless(
    job: _ServeJob,
    cold_start_s,
    taken: dict,
    derived: dict,
    device_names: set,
    *,
    idle_timeout_s,
    max_workers,
    seed,
    max_simulated_requests,
) -> list[Option]:
    """Runpod flex workers: each runs the same engine as a pod, up to the same batch, each new
    worker paying a cold start (``serverless.cold_start`` of the weights, its snapshot restores
    included, unless ``cold_start_s`` gives every start); Poisson arrivals simulated
    (``serverless.simulate``) over at most ``max_simulated_requests`` requests or a day, scaled
    to a month; a class timed on its slowest catalog GPU; only classes holding one of
    ``device_names`` (or without catalog GPUs, when every device is asked)."""
    window_s = min(_SECONDS_PER_DAY, max_simulated_requests / job.rate_per_s)
    arrivals = serverless.poisson_arrivals(job.rate_per_s, window_s, seed=seed)
    derived["simulated_window_s"] = window_s
    every_gpu = {s.name for s in hardware.catalog("gpu")} <= device_names
    starts_by_precision = {}  # the cold start of each precision some class kept (its plain start, restores)
    simulated = []  # each simulation of these arrivals so far (_simulate_once)
    options = []
    for price in prices.serverless_prices():
        specs = [hardware.get(gpu) for gpu in price.gpus]
        if not (every_gpu or any(s.name in device_names for s in specs)):
            continue
        if not specs:
            options.append(
                not_possible(
                    price.name,
                    kind="serverless",
                    device=None,
                    period="month",
                    fits=False,
                    n=0,
                    bound="memory",
                    bytes_=None,
                    precision=None,
                    why="its GPUs are not in the hardware catalog: speed and memory unknown",
                    price=assumptions.DevicePrice(None, "-", "-", "-"),
                )
            )
            continue
        spec = min(specs, key=lambda s: s.bandwidth_bytes_per_s)  # the slowest GPU of the class
        candidates, starts = [], {}
        for precision in job.precisions_for(spec):
            start = starts[precision] = serverless.cold_start(job.replica(precision).part("weights"))
            if cold_start_s is None:
                taken.update(start.assumptions)
            boot = start if cold_start_s is None else cold_start_s
            candidates.append(
                _serverless_at(
                    job,
                    price,
                    spec,
                    precision,
                    arrivals,
                    window_s,
                    boot,
                    simulated,
                    idle_timeout_s=idle_timeout_s,
                    max_workers=max_workers,
                )
            )
        best = _best_precision(candidates)
        if cold_start_s is None and best.precision is not None:
            starts_by_precision[best.precision] = starts[best.precision]
        options.append(best)
    if cold_start_s is not None:
        taken["cold_start_s"] = cold_start_s
    elif starts_by_precision:
        restore = next(iter(starts_by_precision.values()))  # restores take the same time whatever the weights
        derived["serverless_starts"] = (
            "plain start "
            + ", ".join(f"{start.total_s:.0f} s in {p}" for p, start in starts_by_precision.items())
            + f"; a snapshot restore (FlashBoot) {restore.restore_s:g} s"
            + f" for {restore.restore_hit_rate:.0%} of starts"
        )
    return options


def _serverless_at(
    job: _ServeJob,
    price,
    spec,
    precision,
    arrivals,
    window_s,
    cold_start,
    simulated: list,
    *,
    idle_timeout_s,
    max_workers,
) -> Option | _Priced:
    """One serverless class at one precision: ``cold_start`` a ``serverless.ColdStart`` or seconds.
    ``serverless.simulate`` of the arrivals with each request's time in the worker from the
    batch's estimate (``serving.Estimates.latency_s``; ``simulated``: the simulations of these
    arrivals so far, :func:`_simulate_once`) places them on workers and bills them; the
    p95 latency, simulated only when it decides (:func:`_best_precision`), adds the replica
    simulator's time inside a worker to each request's wait (``_ServeJob.worker_p95``)."""
    single = job.replica_bytes(precision)
    per_worker = memory.gpus_needed(single, spec)
    label = price.name if per_worker == 1 else f"{price.name}, {per_worker} GPUs per worker"
    flex = assumptions.DevicePrice(
        price.flex_per_hour, f"{price.name} flex, per GPU", price.source, price.date
    )

    def unfit(why: str) -> Option:  # a worker that cannot hold the model and its KV caches
        return not_possible(
            label,
            kind="serverless",
            device=spec.name,
            period="month",
            fits=False,
            n=per_worker,
            bound="memory",
            bytes_=single,
            precision=precision,
            why=why,
            price=flex,
        )

    if per_worker > job.max_devices:
        return unfit(f"needs {per_worker} GPUs per worker (> max_devices)")
    worker = serving.replica(spec, per_worker)
    server = job.estimates(worker, precision)
    alone = server.at(1)
    concurrency = job.served_batch(worker, precision).batch if job.batch is None else job.batch
    result = _simulate_once(
        simulated,
        arrivals,
        _BatchLatencies(server),
        concurrency=concurrency,
        cold_start_s=cold_start,
        idle_timeout_s=idle_timeout_s,
        max_workers=max_workers,
        price_per_worker_s=price.flex_per_s * per_worker,
    )
    scale = _SECONDS_PER_MONTH / window_s
    device_hours = (
        result.billed_s * per_worker * scale / prices.SECONDS_PER_HOUR
    )  # worker-hours x GPUs per worker
    cost = result.cost_usd * scale

    def timed() -> Option:  # the priced class, with its p95 latency simulated
        try:
            p95 = job.worker_p95(spec, per_worker, precision, result)
            alone_s = job.replica_at(spec, per_worker, precision, job.rate_per_s, 1).e2e.p95 / job.efficiency
        except ValueError as error:  # vLLM's share of the memory leaves no KV cache beside the weights
            return unfit(f"{error} at vLLM's gpu_memory_utilization")
        bound = (
            "cold starts"
            if p95 > job.cold_start_bound_ratio * alone_s
            else "compute"
            if alone.limit == "compute"
            else "bandwidth"
        )
        why = None
        if p95 > job.latency_target_s:
            why = (
                f"p95 latency {format_seconds(p95, 2)} > the target ({result.cold_starts} cold starts "
                f"simulated, {result.restored_starts} of them snapshot restores)"
            )
        return Option(
            name=label,
            kind="serverless",
            device=spec.name,
            n_devices=per_worker,
            fits=True,
            bound=bound,
            why=why,
            latency_s=p95,
            memory_bytes=job.batch_bytes(precision, concurrency),
            precision=precision,
            engine=alone.engine,
            engine_notes=alone.engine_notes,
            **period_fields(
                "month", cost_usd=cost, energy_kwh=_kwh(device_hours, spec), device_hours=device_hours
            ),
            **price_fields(flex),
        )

    # Each latency is its wait plus a positive time inside the worker, so a p95 of the waits above
    # the target already says the class fails at this precision, before any replica is simulated.
    too_slow = bool(result.waits_s) and serverless.percentile(result.waits_s, 95) > job.latency_target_s
    return _Priced(None if too_slow else cost, timed)


def _simulate_once(
    simulated: list, arrivals, latencies: _BatchLatencies, **given
) -> serverless.SimulationResult:
    """``serverless.simulate(arrivals, service_s=latencies.__getitem__, **given)``, or the result of
    an earlier simulation of the same ``arrivals`` (one of ``simulated``, to which a new one is
    added) with the same ``given`` whose every service time, asked again of ``latencies`` in the
    order it first asked them, is the same: e.g. a class in "checkpoint" and in "bf16" for a
    bf16 checkpoint. Exact: ``simulate`` is deterministic, and all it learns beyond ``arrivals``
    and ``given`` is the answers of ``service_s``; which batch it asks next follows from the
    answers before, so equal answers to the questions it first asked mean the same run (and an
    error raised while asking, the same error)."""
    for earlier, asked, result in simulated:
        if earlier == given and all(latencies[batch] == seconds for batch, seconds in asked.items()):
            return result
    result = serverless.simulate(arrivals, service_s=latencies.__getitem__, **given)
    simulated.append((given, dict(latencies), result))
    return result


class _BatchLatencies(dict):
    """``server.latency_s`` of each batch, asked once: ``serverless.simulate`` asks it for every
    request, and a dict's lookup is a fraction of the estimate's method call."""

    def __init__(self, server: serving.Estimates):
        super().__init__()
        self.server = server

    def __missing__(self, batch: int) -> float:
        self[batch] = seconds = self.server.latency_s(batch)
        return seconds


def _per_token(job: _ServeJob) -> list[Option]:
    """Prices per token (``economics.api_cost`` of the month's tokens): providers hosting the
    same open model (kind "hosted"), and closed models' APIs (kind "api": a different model,
    listed for comparison; compare quality yourself)."""
    tokens_per_month = job.rate_per_s * job.tokens_per_request * _SECONDS_PER_MONTH
    output_share = job.output_tokens / job.tokens_per_request
    options = []
    for api in prices.api_prices():
        if api.model is not None and llms.get(api.model).name != job.config.name:
            continue  # another open model
        cost = economics.api_cost(
            tokens_per_month * (1 - output_share),
            tokens_per_month * output_share,
            price_in_per_million=api.input_per_million,
            price_out_per_million=api.output_per_million,
        )
        hosted = api.model is not None
        options.append(
            Option(
                name=f"per token: {api.name}" if hosted else f"API: {api.name}",
                kind="hosted" if hosted else "api",
                device=None,
                n_devices=0,
                fits=True,
                **period_fields("month", cost_usd=cost),
                usd_per_hour=None,
                price_source=f"{api.provider}: {api.source}",
                price_date=api.date_label,
                bound="price",
                why=None if hosted else f"a closed model, not {job.config.name}: a different product",
            )
        )
    return options
