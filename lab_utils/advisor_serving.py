"""The advisor's serving job: :func:`serve` ranks every way to serve a model for a month of
traffic: always-on CPU and GPU servers, serverless GPU workers, and per-token prices.

No arithmetic of its own: memory from ``lab_utils.memory``, speeds from ``lab_utils.serving``
(prefill, decode and batching bounds through an engine's profile), serverless workers from
``lab_utils.serverless`` (simulated arrivals, cold starts), the always-on rule and bill from
``lab_utils.basics`` and per-token bills from ``economics.api_cost``. Pure Python: no torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from lab_utils import (
    assumptions,
    basics,
    checks,
    economics,
    energy,
    engines,
    hardware,
    llms,
    memory,
    offload,
    prices,
    replica,
    serverless,
    serving,
)
from lab_utils.advisor_options import (
    Advice,
    Option,
    catalog_devices,
    checked_cpu_offer,
    devices_needed,
    not_possible,
    period_fields,
    price_fields,
)
from lab_utils.units import format_seconds

__all__ = ["serve"]

_SECONDS_PER_DAY = 24 * prices.SECONDS_PER_HOUR
_SECONDS_PER_MONTH = basics.HOURS_PER_MONTH * prices.SECONDS_PER_HOUR


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
    ``serving`` bounds with continuous batching, billed all month), :func:`_serverless`
    (Runpod flex workers running the same engine, ``serverless.simulate`` with cold starts and
    idle time) and :func:`_per_token` (the same open model sold per token by hosting providers,
    and closed models' APIs, listed for comparison: a different product, never the verdict).
    Each GPU is tried at every precision of ``precision`` (default the ``serve_precisions``
    assumption: bf16, fp8, int8, int4) that fits; the cheapest working one is kept, best
    quality first on a tie, and ``Option.precision`` says which. ``devices``: catalog device
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


@dataclass(frozen=True)
class _ServeJob:
    """One serving job, checked: what every part of :func:`serve` asks the calculators about."""

    config: llms.LLMConfig
    rate_per_s: float
    input_tokens: int
    output_tokens: int
    latency_target_s: float
    precisions: tuple[str, ...]
    batch: int | None
    utilisation: float
    efficiency: float
    engine: str | None
    max_devices: int
    price_bound_load_share: float
    cold_start_bound_ratio: float
    servers: dict = field(default_factory=dict, compare=False, repr=False)  # see estimates()

    @property
    def tokens_per_request(self) -> int:
        return self.input_tokens + self.output_tokens

    def precisions_for(self, spec) -> tuple[str, ...]:
        """The precisions tried on ``spec``: a CPU's first one; a GPU's all, but fp8 only where it
        has FP8 units (a T4 or an A100 serves 8-bit weights as int8), unless fp8 was all asked."""
        if spec.kind != "gpu":
            return self.precisions[:1]
        usable = tuple(p for p in self.precisions if p != "fp8" or "fp8" in spec.peak_flops)
        return usable or self.precisions

    def shape(self, precision: str) -> dict:
        """The keywords ``serving.estimate`` and friends take for this job in ``precision``."""
        return dict(
            prompt_len=max(1, self.input_tokens),
            output_len=self.output_tokens,
            precision=precision,
            efficiency=self.efficiency,
            engine=self.engine,
        )

    def replica_bytes(self, precision: str) -> float:
        """Bytes of the weights in ``precision`` and one request's KV cache (``memory.job_estimate``)."""
        return memory.job_estimate(
            self.config, method="inference", precision=precision, batch=1, seq_len=self.tokens_per_request
        ).total_bytes

    def batch_bytes(self, precision: str, batch: int) -> float:
        """Bytes a replica holds serving ``batch`` requests: one request's plus the other caches."""
        return self.replica_bytes(precision) + (batch - 1) * serving.kv_bytes_per_sequence(
            self.config, context_len=self.tokens_per_request
        )

    def estimates(self, device, precision: str) -> serving.Estimates:
        """``serving.Estimates`` of this job on ``device`` (a replica) in ``precision``, made once
        and kept: the always-on server and a serverless worker of the same GPUs ask the same."""
        key = (device.name, precision)
        if key not in self.servers:
            self.servers[key] = serving.Estimates(
                self.config, device=device, usd_per_hour=0.0, **self.shape(precision)
            )
        return self.servers[key]

    def p95_at(self, spec, n_devices: int, precision: str, rate_per_s: float) -> float:
        """The 95th-percentile latency of a request (arrival to last token) on one replica of
        ``n_devices`` x ``spec`` at Poisson ``rate_per_s``: ``replica.at_rate`` over the
        ``replica_requests`` assumption's requests, the times divided by ``efficiency``. Where
        fewer than 5% of the requests would share the replica with another (Poisson: 1 - exp(-2 x
        rate x one request's latency) < 0.05), the p95 is one request's latency alone, and that
        one request is all that is simulated."""
        job = dict(
            device=spec,
            n_devices=n_devices,
            rate_per_s=rate_per_s,
            prompt_len=max(1, self.input_tokens),
            output_len=self.output_tokens,
            precision=precision,
            engine=self.engine,
            usd_per_hour=0.0,
        )
        alone_s = replica.at_rate(self.config, n_requests=1, **job).e2e.p95
        if 1 - math.exp(-2 * rate_per_s * alone_s) < 0.05:
            return alone_s / self.efficiency
        simulated = replica.at_rate(self.config, n_requests=assumptions.value("replica_requests"), **job)
        return simulated.e2e.p95 / self.efficiency

    def served_batch(self, device, precision: str):
        """``serving.estimate`` at the batch a replica runs: ``batch`` when given, else the
        largest that keeps a request within the target (``serving.capacity``), at least 1."""
        server = self.estimates(device, precision)
        if self.batch is not None:
            return server.at(self.batch)
        return server.capacity(self.latency_target_s) or server.at(1)


def _best_precision(candidates: list[Option]) -> Option:
    """The cheapest working option of one device, the better precision first on a tie (the
    candidates come in quality order); the first one when none works."""
    working = [o for o in candidates if o.works and o.cost_per_month_usd is not None]
    return min(working, key=lambda o: o.cost_per_month_usd) if working else candidates[0]


def _always_on(job: _ServeJob, specs, cpu_offer: str) -> list[Option]:
    """Always-on servers: per device, replicas of as many devices as hold the weights and one
    request's KV cache, batching up to the latency target, enough of them that the average
    load uses at most ``utilisation`` of their requests/s, billed every hour of the month."""
    options = []
    for spec in specs:
        price = assumptions.device_price(spec, cpu_offer=cpu_offer)
        options.append(
            _best_precision([_always_on_at(job, spec, price, p) for p in job.precisions_for(spec)])
        )
    return options


def _always_on_at(job: _ServeJob, spec, price, precision: str) -> Option:
    single = job.replica_bytes(precision)
    per_replica = devices_needed(single, spec)
    common = dict(
        kind=spec.kind, device=spec.name, period="month", price=price, precision=precision, bytes_=single
    )
    if per_replica == 0 or per_replica > job.max_devices:
        n = max(per_replica, 1)
        why = (
            "does not fit in one server's memory"
            if per_replica == 0
            else f"needs {per_replica} GPUs per replica: "
            f"more than one server of {job.max_devices} (max_devices)"
        )
        return not_possible(
            spec.name if n == 1 else f"{n} x {spec.name}", fits=False, n=n, bound="memory", why=why, **common
        )
    if not _has_peak(spec) or not spec.bandwidth_bytes_per_s:
        return not_possible(
            spec.name,
            fits=True,
            n=per_replica,
            bound="compute",
            why="the catalog has no peak or bandwidth to estimate its speed",
            **common,
        )
    replica = serving.replica(spec, per_replica)
    served = job.served_batch(replica, precision)
    replicas = basics.always_on_devices(job.rate_per_s, served.requests_per_s, job.utilisation)
    n = replicas * per_replica
    load = job.rate_per_s / (served.requests_per_s * replicas)
    if job.batch is None:  # the batch the average load fills
        served = job.estimates(replica, precision).at_load(job.rate_per_s / replicas) or served
    try:
        latency_s = job.p95_at(spec, per_replica, precision, job.rate_per_s / replicas)
    except ValueError as error:  # vLLM's share of the memory leaves no KV cache beside the weights
        name = spec.name if per_replica == 1 else f"{per_replica} x {spec.name}"
        why = f"{error} at vLLM's gpu_memory_utilization"
        return not_possible(name, fits=False, n=per_replica, bound="memory", why=why, **common)
    speed_bound = "compute" if served.limit == "compute" else "bandwidth"
    idle = replicas == 1 and load < job.utilisation * job.price_bound_load_share
    bound = "price" if idle else speed_bound
    why = None
    if latency_s > job.latency_target_s:
        why, bound = (f"p95 latency {format_seconds(latency_s, 2)} at this rate > the target", speed_bound)
    elif price.usd_per_hour is None:
        why = "no price in the data for this device"
    hours = n * basics.HOURS_PER_MONTH
    cost = None if price.usd_per_hour is None else basics.always_on_per_month_usd(n, price.usd_per_hour)
    return Option(
        name=f"{spec.name if n == 1 else f'{n} x {spec.name}'} always on",
        kind=spec.kind,
        device=spec.name,
        n_devices=n,
        fits=True,
        bound=bound,
        why=why,
        latency_s=latency_s,
        memory_bytes=job.batch_bytes(precision, served.batch),
        precision=precision,
        engine=served.engine,
        engine_notes=served.engine_notes,
        **period_fields("month", cost_usd=cost, energy_kwh=_kwh(hours, spec), device_hours=hours),
        **price_fields(price),
    )


def _hybrid(job: _ServeJob, specs) -> list[Option]:
    """One GPU too small for the model alone, with the rest in its host's RAM (``offload``:
    llama.cpp's layers or experts in RAM), the fastest placement that fits, answering one request
    at a time as llama.cpp does; enough of them for the load, each billed as its GPU's pod (the
    host, the ``offload_host`` assumption, taken to come with the GPU)."""
    host = assumptions.value("offload_host")
    options = []
    for spec in specs:
        if spec.kind != "gpu" or not spec.bandwidth_bytes_per_s:
            continue
        try:
            placed = offload.fitting_placements(
                job.config,
                gpu=spec,
                host=host,
                prompt_len=max(job.input_tokens, 1),
                context_len=job.input_tokens + job.output_tokens,
            )
        except ValueError:  # no PCIe link or peak in the catalog
            continue
        split = [p for p in placed if p.placement != "all on the GPU"]
        if not split or len(split) < len(placed):  # it fits the GPU alone: always on covers it
            continue
        best = split[0]
        latency_s = (
            job.input_tokens / best.prefill_tokens_per_s + job.output_tokens / best.decode_tokens_per_s
        )
        n = basics.always_on_devices(job.rate_per_s, 1 / latency_s, job.utilisation)
        price = assumptions.device_price(spec)
        why = None
        if latency_s > job.latency_target_s:
            why = f"a request takes {format_seconds(latency_s, 2)} > the target"
        elif price.usd_per_hour is None:
            why = "no price in the data for this device"
        hours = n * basics.HOURS_PER_MONTH
        cost = None if price.usd_per_hour is None else basics.always_on_per_month_usd(n, price.usd_per_hour)
        options.append(
            Option(
                name=f"{f'{n} x ' if n > 1 else ''}{spec.name} + {host} host, {best.placement}, always on",
                kind=spec.kind,
                device=spec.name,
                n_devices=n,
                fits=True,
                bound="bandwidth",
                why=why,
                latency_s=latency_s,
                memory_bytes=best.gpu_bytes,
                precision=best.precision,
                engine=best.engine,
                engine_notes=best.engine_notes,
                **period_fields("month", cost_usd=cost, energy_kwh=_kwh(hours, spec), device_hours=hours),
                **price_fields(price),
            )
        )
    return options


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
            start = starts[precision] = serverless.cold_start(
                memory.job_estimate(job.config, "inference", precision, batch=1, seq_len=1).part("weights")
            )
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
    job: _ServeJob, price, spec, precision, arrivals, window_s, cold_start, *, idle_timeout_s, max_workers
) -> Option:
    """One serverless class at one precision: ``cold_start`` a ``serverless.ColdStart`` or seconds."""
    single = job.replica_bytes(precision)
    per_worker = memory.gpus_needed(single, spec)
    label = price.name if per_worker == 1 else f"{price.name}, {per_worker} GPUs per worker"
    flex = assumptions.DevicePrice(
        price.flex_per_hour, f"{price.name} flex, per GPU", price.source, price.date
    )
    if per_worker > job.max_devices:
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
            why=f"needs {per_worker} GPUs per worker (> max_devices)",
            price=flex,
        )
    worker = serving.replica(spec, per_worker)
    server = job.estimates(worker, precision)
    alone = server.at(1)
    concurrency = job.served_batch(worker, precision).batch if job.batch is None else job.batch
    result = serverless.simulate(
        arrivals,
        service_s=server.latency_s,
        concurrency=concurrency,
        cold_start_s=cold_start,
        idle_timeout_s=idle_timeout_s,
        max_workers=max_workers,
        price_per_worker_s=price.flex_per_s * per_worker,
    )
    scale = _SECONDS_PER_MONTH / window_s
    p95 = result.p95_s if arrivals else alone.latency_s
    bound = (
        "cold starts"
        if p95 > job.cold_start_bound_ratio * alone.latency_s
        else "compute"
        if alone.limit == "compute"
        else "bandwidth"
    )
    why = None
    if p95 > job.latency_target_s:
        why = (
            f"p95 latency {format_seconds(p95, 2)} > the target ({result.cold_starts} cold starts simulated, "
            f"{result.restored_starts} of them snapshot restores)"
        )
    device_hours = (
        result.billed_s * per_worker * scale / prices.SECONDS_PER_HOUR
    )  # worker-hours x GPUs per worker
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
            "month",
            cost_usd=result.cost_usd * scale,
            energy_kwh=_kwh(device_hours, spec),
            device_hours=device_hours,
        ),
        **price_fields(flex),
    )


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


def _kwh(device_hours: float, spec: hardware.Spec) -> float | None:
    """kWh of ``device_hours`` of ``spec`` at its TDP (``energy.job_energy_kwh``); None without one."""
    return energy.job_energy_kwh(device_hours, 1, spec.tdp_watts) if spec.tdp_watts else None


def _has_peak(spec: hardware.Spec) -> bool:
    """Whether the catalog has a peak of ``spec`` in a dtype it computes in (``basics.peak_flops``)."""
    try:
        basics.peak_flops(spec)
    except ValueError:
        return False
    return True
