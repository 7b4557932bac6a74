"""The advisor's always-on serving options: CPU and GPU servers, and a GPU with the model's rest
in its host's RAM (``lab_utils.offload``), each priced for a month (``basics``). Pure Python: no torch.
"""

from __future__ import annotations

import dataclasses

from lab_utils import (
    assumptions,
    basics,
    offload,
    prices,
    serving,
)
from lab_utils.advisor_options import (
    Option,
    devices_needed,
    not_possible,
    period_fields,
    price_fields,
)
from lab_utils.advisor_serve_job import (
    _best_precision,
    _has_peak,
    _kwh,
    _Priced,
    _ServeJob,
)
from lab_utils.units import format_bytes, format_seconds


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


def _always_on_at(job: _ServeJob, spec, price, precision: str) -> Option | _Priced:
    """One server at one precision: an :class:`Option` when it cannot run the model, else
    priced, its p95 latency at the rate (``_ServeJob.p95_at``) simulated when it decides."""
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

    def unfit(why: str) -> Option:  # a replica with no room for the batch's KV caches
        name = spec.name if per_replica == 1 else f"{per_replica} x {spec.name}"
        return not_possible(name, fits=False, n=per_replica, bound="memory", why=why, **common)

    try:
        served = job.served_batch(replica, precision)
    except ValueError as error:  # the batch asked for has no room beside the weights
        return unfit(str(error))
    replicas = basics.always_on_devices(job.rate_per_s, served.requests_per_s, job.utilisation)
    n = replicas * per_replica
    load = job.rate_per_s / (served.requests_per_s * replicas)
    cost = None if price.usd_per_hour is None else basics.always_on_per_month_usd(n, price.usd_per_hour)

    def timed(served=served) -> Option:  # the priced server, with its p95 at the rate simulated
        if job.batch is None:  # the batch the average load fills
            served = job.estimates(replica, precision).at_load(job.rate_per_s / replicas) or served
        try:
            latency_s = job.p95_at(spec, per_replica, precision, job.rate_per_s / replicas)
        except ValueError as error:  # vLLM's share of the memory leaves no KV cache beside the weights
            return unfit(f"{error} at vLLM's gpu_memory_utilization")
        speed_bound = "compute" if served.limit == "compute" else "bandwidth"
        idle = replicas == 1 and load < job.utilisation * job.price_bound_load_share
        bound = "price" if idle else speed_bound
        why = None
        if latency_s > job.latency_target_s:
            why, bound = (
                f"p95 latency {format_seconds(latency_s, 2)} at this rate > the target",
                speed_bound,
            )
        elif price.usd_per_hour is None:
            why = "no price in the data for this device"
        hours = n * basics.HOURS_PER_MONTH
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

    return _Priced(cost, timed)


def _hybrid(job: _ServeJob, specs) -> list[Option]:
    """One GPU too small for the model alone, with the rest in its host's RAM (``offload``:
    llama.cpp's layers or experts in RAM), the fastest placement that fits, answering one request
    at a time as llama.cpp does; enough of them for the load, each billed at the cheapest offer of
    that GPU whose host RAM holds the host's share (``prices.host_offer``), else at the GPU's own
    price, the host (the ``offload_host`` assumption) taken to come with it, as the label says."""
    host = assumptions.value("offload_host")
    options = []
    for spec in specs:
        if spec.kind != "gpu" or not spec.bandwidth_bytes_per_s:
            continue
        shape = dict(
            gpu=spec, host=host, prompt_len=max(job.input_tokens, 1), context_len=job.tokens_per_request
        )
        try:
            # It fits the GPU alone: always on covers it (fitting_placements would find it so, or
            # nothing where the host cannot hold the rest: the fewer layers on the GPU, the more fit).
            if offload.estimate(job.config, **shape).fits:
                continue
            placed = offload.fitting_placements(job.config, **shape)  # so each a split
        except ValueError:  # no PCIe link or peak in the catalog
            continue
        if not placed:
            continue
        best = placed[0]
        latency_s = (
            job.input_tokens / best.prefill_tokens_per_s + job.output_tokens / best.decode_tokens_per_s
        )
        n = basics.always_on_devices(job.rate_per_s, 1 / latency_s, job.utilisation)
        price = _host_price(spec, best.host_bytes)
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


def _host_price(spec, host_bytes) -> assumptions.DevicePrice:
    """The price of one ``spec`` with ``host_bytes`` in its host's RAM: the cheapest machine of
    that GPU whose RAM holds them, else the GPU's own price, saying the host is assumed."""
    offer = prices.host_offer(spec.name, host_bytes)
    if offer is not None:
        ram = f"{offer.host_ram_gib:g} GiB of host RAM"
        return assumptions.DevicePrice(offer.usd_per_hour, f"{offer.name}, {ram}", offer.source, offer.date)
    price = assumptions.device_price(spec)
    if price.usd_per_hour is None:
        return price
    held = format_bytes(host_bytes)
    label = f"{price.offer}; no offer in the data states a host with {held} of RAM: host assumed with it"
    return dataclasses.replace(price, offer=label)
