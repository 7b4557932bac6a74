"""Which hardware for my job? Every option that could do it, ranked by cost then time.

Three kinds of job: :func:`fine_tune` (a catalog LLM or a parameter count, tokens, method
full / LoRA / QLoRA), :func:`serve` (a model, requests per day, tokens in and out per request,
a latency target) and :func:`train` (a dense network, optionally with a sparse embedding table,
as in a recommender). Each returns an :class:`Advice`: one :class:`Option` per CPU server,
catalog GPU (alone or several of it in one server), serverless GPU class and, for serving,
paid API, with whether it fits, how many devices, hours, dollars, the price's source and date,
the bound that limits it, and for an option that cannot work, why.

No arithmetic of its own beyond adding up: memory from ``lab_utils.memory`` (job_estimate,
training_state_bytes, fits, gpus_needed), time from ``lab_utils.economics`` (training_flops,
training_hours), serving from ``lab_utils.serving`` (prefill, decode and batching bounds),
serverless from ``lab_utils.serverless`` (simulate, cold_start), prices from ``lab_utils/data/prices.toml`` with their dates.

Prices: a GPU is priced by its cheapest hourly offer in the data (per GPU); a catalog GPU with no
hourly offer by its Runpod serverless *active* rate x 3600, labelled so; a GPU with neither is
listed as "no price in the data" and never given an invented one. A CPU server is priced per
core from the CPU offer ``cpu_offer`` (default AWS c5.24xlarge) scaled to the catalog CPU's core
count, labelled as that assumption. Everything here is an estimate from vendor specifications
and list prices, not a measurement. Pure Python: no torch.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from lab_utils import assumptions, checks, economics, energy, hardware, llms, memory, serverless, serving
from lab_utils.units import format_seconds

__all__ = ["BOUNDS", "Advice", "Option", "fine_tune", "serve", "train"]

BOUNDS = ("memory", "compute", "bandwidth", "cold starts", "price")
"""What limits an option: it does not fit (memory), FLOP/s, bytes/s, serverless cold starts,
or the price of the smallest rental (the device idles most of the time)."""

_SECONDS_PER_DAY = 86_400.0
_SECONDS_PER_MONTH = economics.HOURS_PER_MONTH * economics.SECONDS_PER_HOUR
_METHODS = ("full", "lora", "qlora")


@dataclass(frozen=True)
class Option:
    """One way to run the job. Money in US dollars; ``cost`` is for the whole job (training)
    or per month (serving), None when it cannot be priced.

    ``hours``: wall-clock hours of the job (training), or device-hours billed per month
    (serving; None for an API). ``latency_s``: seconds per request (serving: p95 for
    serverless, the estimate for a busy server); None for training. ``why``: None when the
    option works, else the reason it cannot.
    """

    name: str
    kind: str  # "cpu" | "gpu" | "serverless" | "api"
    fits: bool
    n_devices: int
    hours: float | None
    cost_usd: float | None
    price_usd_per_hour: float | None
    price_source: str
    price_date: str
    bound: str
    why: str | None = None
    latency_s: float | None = None
    memory_bytes: float | None = None
    energy_kwh: float | None = None  # the devices at their TDP over the job or month (lab_utils.energy); None: APIs
    emissions_kg: float | None = None  # CO2e of energy_kwh at the assumed grid intensity

    @property
    def works(self) -> bool:
        return self.why is None


@dataclass(frozen=True)
class Advice:
    """The options for one job, working ones first, each group by cost then time.

    ``period``: what ``Option.cost_usd`` covers ("job" or "month"); ``assumptions``: the
    (name, value) pairs the estimate used, to print beside the answer; ``ranked_by``: "cost"
    (the order above) or "energy" (:meth:`ranked`).
    """

    job: str
    period: str
    options: tuple[Option, ...]
    assumptions: tuple[tuple[str, object], ...]
    ranked_by: str = "cost"

    def ranked(self, by: str = "cost") -> Advice:
        """The same options ranked by "cost" (working ones first, then dollars, then time) or by
        "energy" (working ones first, then kWh, fewest first; options without an energy
        estimate, such as APIs, last)."""
        by = checks.choice("by", by, tuple(_RANK_KEYS))
        return dataclasses.replace(self, options=tuple(sorted(self.options, key=_RANK_KEYS[by])), ranked_by=by)

    @property
    def best(self) -> Option | None:
        """The cheapest working option (None when nothing works)."""
        return min((o for o in self.options if o.works and o.cost_usd is not None), key=_cost_key, default=None)

    def option(self, name: str) -> Option:
        """One option by its exact name."""
        for o in self.options:
            if o.name == name:
                return o
        raise ValueError(f"name={name!r} is not an option here; options: {[o.name for o in self.options]}")

    @property
    def verdict(self) -> str:
        """The answer in one plain sentence: 'an API', 'a CPU', 'a GPU', 'serverless GPUs'."""
        best = self.best
        if best is None:
            return f"{self.job}: no option works under these assumptions."
        words = {"api": "an API", "cpu": "a CPU", "gpu": "a GPU" if best.n_devices == 1 else "GPUs",
                 "serverless": "serverless GPUs"}[best.kind]
        return (f"{self.job}: the answer is {words} — {best.name}, ${best.cost_usd:,.2f} per {self.period} "
                f"(price {best.price_date}, {best.price_source}).")

    def table(self, limit: int | None = None) -> str:
        """The ranking as a text table (what the notebook and ``lab-utils pick`` print)."""
        from tabulate import tabulate

        rows = []
        for rank, o in enumerate(self.options[:limit], start=1):
            if self.period == "month":
                time = "-" if o.latency_s is None else format_seconds(o.latency_s)
            else:
                time = "-" if o.hours is None else format_seconds(o.hours * 3600)
            cost = "no price" if o.cost_usd is None else f"{o.cost_usd:,.2f}"
            energy_cells = [
                "-" if o.energy_kwh is None else f"{o.energy_kwh:,.3g}",
                "-" if o.emissions_kg is None else f"{o.emissions_kg:,.3g}"]
            rows.append((rank, o.name, o.n_devices, "yes" if o.fits else "no", time, cost, *energy_cells, o.bound,
                         o.price_date, o.why or ""))
        energy_headers = (f"kWh per {self.period}", "kg CO2e")
        headers = ("#", "option", "n", "fits", "time", f"$ per {self.period}", *energy_headers, "bound", "price date",
                   "why not")
        note = "time: request latency" if self.period == "month" else "time: wall clock of the job"
        return (tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True,
                         colalign=("right", "left", "right", "left", "right", "right",
                                   *("right",) * len(energy_headers), "left", "left", "left"))
                + f"\n({note}; kWh: the devices at their TDP, no building overhead (PUE), APIs publish none;"
                  f" estimates from vendor specs and list prices)")

    def to_dict(self) -> dict:
        """Plain data for JSON."""
        from dataclasses import asdict
        return {"job": self.job, "period": self.period, "verdict": self.verdict, "ranked_by": self.ranked_by,
                "assumptions": {k: v for k, v in self.assumptions},
                "options": [dict(asdict(o), works=o.works) for o in self.options]}


# --- prices and peaks: the assumptions' rules ------------------------------------------------

_NO_PRICE = assumptions.DevicePrice(None, "-", "-", "-")


def _peak(spec: hardware.Spec) -> tuple[str | None, float | None]:
    """(dtype, dense peak FLOP/s) in the dtype ``spec`` computes in; (None, None) without a peak."""
    try:
        dtype = assumptions.compute_dtype(spec)
    except ValueError:
        return None, None
    return dtype, spec.peak_flops[dtype]


def _devices_needed(n_bytes: float, spec: hardware.Spec) -> int:
    """GPUs to hold ``n_bytes`` (memory.gpus_needed); a CPU server holds it or not (1 or 0)."""
    if spec.kind == "gpu":
        return memory.gpus_needed(n_bytes, spec)
    return 1 if n_bytes <= spec.memory_bytes else 0


def _hardware(include_cpus: bool):
    """Every catalog GPU, and the catalog CPUs with a published peak (a server to rent; the
    Colab CPU runtime, with none, is left out)."""
    cpus = tuple(s for s in hardware.catalog("cpu") if s.peak_flops) if include_cpus else ()
    return hardware.catalog("gpu") + cpus


def _cost_key(o: Option):
    time = o.latency_s if o.latency_s is not None else (o.hours if o.hours is not None else math.inf)
    return (not o.works, o.cost_usd is None, o.cost_usd if o.cost_usd is not None else math.inf, time, o.name)


def _energy_key(o: Option):
    return (not o.works, o.energy_kwh is None, o.energy_kwh if o.energy_kwh is not None else math.inf,
            *_cost_key(o)[1:])


_RANK_KEYS = {"cost": _cost_key, "energy": _energy_key}


def _rank(options) -> tuple[Option, ...]:
    return tuple(sorted(options, key=_cost_key))


def _energy_fields(device_hours: float, spec: hardware.Spec) -> dict:
    """energy_kwh and emissions_kg of ``device_hours`` of ``spec`` at its TDP (lab_utils.energy);
    None without a TDP."""
    kwh = energy.job_energy_kwh(device_hours, 1, spec.tdp_watts) if spec.tdp_watts else None
    return {"energy_kwh": kwh, "emissions_kg": None if kwh is None else energy.emissions_kg(kwh)}


def _price_fields(price: assumptions.DevicePrice) -> dict:
    source = "-" if price.usd_per_hour is None and price.source == "-" else f"{price.offer} ({price.source})"
    return {"price_usd_per_hour": price.usd_per_hour, "price_source": source, "price_date": price.date}


def _not_possible(name, kind, spec_or_none, fits, n, bytes_, bound, why, price=_NO_PRICE):
    return Option(name=name, kind=kind, fits=fits, n_devices=n, hours=None, cost_usd=None,
                  bound=bound, why=why, memory_bytes=bytes_, **_price_fields(price))


def _defaults(**given) -> dict:
    """Each argument given as None replaced by the assumption of the same name."""
    return {name: assumptions.value(name) if value is None else value for name, value in given.items()}


def _common(mfu, cpu_mfu, max_devices, cpu_offer):
    """The checked (mfu, cpu_mfu, max_devices, cpu_offer), defaults from the assumptions."""
    values = _defaults(mfu=mfu, cpu_mfu=cpu_mfu, max_devices=max_devices, cpu_offer=cpu_offer)
    mfu = checks.number("mfu", values["mfu"], maximum=1.0)
    cpu_mfu = checks.number("cpu_mfu", values["cpu_mfu"], maximum=1.0)
    max_devices = checks.count("max_devices", values["max_devices"])
    cpu_offer = values["cpu_offer"]
    if not isinstance(cpu_offer, str):
        raise TypeError(f"cpu_offer must be a str naming an hourly offer, got {type(cpu_offer).__name__}")
    economics.hourly_price(cpu_offer)  # an unknown name fails here, listing the offers
    return mfu, cpu_mfu, max_devices, cpu_offer


def _model(model, name="model"):
    """An LLMConfig for a catalog name, or None with the parameter count for a bare number."""
    if isinstance(model, str):
        return llms.get(model), None
    if isinstance(model, llms.LLMConfig):
        return model, None
    return None, checks.number(name, model)


# --- time-bound jobs: one fine-tune or training run -----------------------------------------

def _run_options(label, memory_bytes, flops, bytes_moved, specs, *, mfu, cpu_mfu, max_devices, cpu_offer,
                 bandwidth_efficiency, servers=False):
    """Options for a job of ``flops`` that moves ``bytes_moved`` and must hold ``memory_bytes``:
    hours = max(FLOPs / (peak x MFU x n), bytes / (bandwidth x efficiency x n)) / 3600, ``mfu`` a
    number or a function of (n GPUs, dtype) (the regime's: ``economics.mfu_assumption``). With
    ``servers``, a GPU job beyond one server of ``max_devices`` rents whole servers
    (``assumptions.device_price`` with ``n_gpus``); else it cannot run."""
    options = []
    for spec in specs:
        kind = spec.kind
        price = assumptions.device_price(spec, cpu_offer=cpu_offer)
        dtype, peak = _peak(spec)
        n = _devices_needed(memory_bytes, spec)
        if n == 0:
            options.append(_not_possible(spec.name, kind, spec, False, 1, memory_bytes, "memory",
                                         "does not fit in one server's memory", price))
            continue
        if n > max_devices and not servers:
            options.append(_not_possible(f"{n} x {spec.name}", kind, spec, False, n, memory_bytes, "memory",
                                         f"needs {n} GPUs to hold the job: more than one server of "
                                         f"{max_devices} (max_devices)", price))
            continue
        name = spec.name if n == 1 else f"{n} x {spec.name}"
        if n > max_devices:
            n = math.ceil(n / max_devices) * max_devices
            name, price = f"{n} x {spec.name} ({n // max_devices} servers)", assumptions.device_price(spec, n_gpus=n)
        if peak is None or (bytes_moved and not spec.bandwidth_bytes_per_s):
            options.append(_not_possible(name, kind, spec, True, n, memory_bytes, "compute",
                                         "the catalog has no peak or bandwidth to estimate its speed", price))
            continue
        gpu_mfu = mfu(n, dtype) if callable(mfu) else mfu
        compute_h = economics.training_hours(flops, peak_flops=peak, mfu=cpu_mfu if kind == "cpu" else gpu_mfu,
                                             n_devices=n)
        bandwidth_h = (bytes_moved / (spec.bandwidth_bytes_per_s * bandwidth_efficiency * n) /
                       economics.SECONDS_PER_HOUR) if bytes_moved else 0.0
        hours = max(compute_h, bandwidth_h)
        bound = "bandwidth" if bandwidth_h > compute_h else "compute"
        why = None if price.usd_per_hour is not None else "no price in the data for this device"
        options.append(Option(name=name, kind=kind, fits=True, n_devices=n, hours=hours,
                              cost_usd=None if price.usd_per_hour is None else hours * n * price.usd_per_hour,
                              bound=bound, why=why, memory_bytes=memory_bytes, **_energy_fields(hours * n, spec),
                              **_price_fields(price)))
    return Advice(job=label, period="job", options=_rank(options), assumptions=tuple(
        (name, assumptions.value(name)) for name in ("power_share_of_tdp", "grid_kg_co2e_per_kwh")))


def fine_tune(model, n_tokens, *, method: str = "lora", mfu: float | None = None, cpu_mfu: float | None = None,
              seq_len: int | None = None, batch: int | None = None, recompute: str | None = None,
              lora_rank: int | None = None, max_devices: int | None = None, cpu_offer: str | None = None,
              include_cpus: bool = True) -> Advice:
    """Rank the hardware for one fine-tune of ``model`` (an ``llms`` name or a parameter count)
    over ``n_tokens`` tokens with ``method`` "full", "lora" or "qlora".

    Memory: ``memory.job_estimate`` in the method's precision (activations of ``batch`` x
    ``seq_len`` with ``recompute``). For a bare parameter count only the weights and, for full,
    the optimizer state are known: the total is a lower bound. FLOPs: ``economics.training_flops``
    (6ND full, 4ND LoRA/QLoRA, and the attention term where the model's shape is known); hours at
    ``mfu`` of the dense peak in the dtype each device computes in (left None: the regime of
    each GPU option, ``economics.mfu_assumption``, as ``economics.fine_tune_estimate`` takes it;
    ``cpu_mfu`` on CPUs); GPUs split the job evenly and scale perfectly (a lower
    bound on hours); beyond one server of ``max_devices`` GPUs, whole servers, priced as such
    (``assumptions.device_price`` with ``n_gpus``). Every argument left None is the assumption of the same name in
    ``lab_utils.assumptions`` (seq_len: ``seq_len``; batch: ``batch``;
    recompute: ``recompute_fine_tune``).
    """
    method = checks.choice("method", method, _METHODS)
    regimes = mfu is None
    mfu, cpu_mfu, max_devices, cpu_offer = _common(mfu, cpu_mfu, max_devices, cpu_offer)
    if regimes:  # each GPU option at its regime's MFU: one GPU, several (FSDP/ZeRO), FP8
        def mfu(n_gpus, dtype):
            return assumptions.value(economics.mfu_assumption(n_gpus, dtype))
    job = _defaults(seq_len=seq_len, batch=batch, recompute_fine_tune=recompute,
                    lora_rank=lora_rank)
    n_tokens = checks.number("n_tokens", n_tokens)
    config, n_params = _model(model)
    precision = assumptions.precision_for(method)
    if config is not None:
        estimate = memory.job_estimate(config, method=method, precision=precision, batch=job["batch"],
                                       seq_len=job["seq_len"], recompute=job["recompute_fine_tune"],
                                       lora_rank=job["lora_rank"])
        memory_bytes, n_compute, label = estimate.total_bytes, config.params_per_token, config.name
    elif method == "full":
        memory_bytes = memory.training_state_bytes(n_params).total_bytes
        n_compute, label = n_params, f"{n_params:.3g}-parameter model"
    else:
        memory_bytes = memory.weight_bytes(n_params, precision)
        n_compute, label = n_params, f"{n_params:.3g}-parameter model"
    shape = {}
    if config is not None and config.n_heads is not None:
        shape = dict(model=config, seq_len=job["seq_len"], attention_term=assumptions.value("attention_term"))
    flops = economics.training_flops(n_compute, n_tokens, method, **shape)
    advice = _run_options(f"{method} fine-tune of {label} on {n_tokens:.3g} tokens", memory_bytes, flops, 0.0,
                          _hardware(include_cpus), mfu=mfu, cpu_mfu=cpu_mfu, max_devices=max_devices,
                          cpu_offer=cpu_offer, bandwidth_efficiency=1.0, servers=True)
    return Advice(advice.job, advice.period, advice.options,
                  ((f"precision.{method}", precision),
                   *((name, assumptions.value(name)) for name in ("mfu_single_gpu", "mfu_multi_gpu") if regimes),
                   *((("mfu", mfu),) if not regimes else ()),
                   *((("attention_term", shape["attention_term"]),) if shape else ()), ("cpu_mfu", cpu_mfu), *job.items(),
                   ("max_devices", max_devices), ("cpu_offer", cpu_offer), ("memory_bytes", memory_bytes),
                   ("flops", flops), *advice.assumptions))


def train(dense_params, n_examples, *, tokens_per_example: int = 1, embedding_params: float = 0,
          lookups_per_example: int = 0, embedding_dim: int = 128, embedding_bytes_per_param: float | None = None,
          mfu: float | None = None, cpu_mfu: float | None = None, gather_efficiency: float | None = None,
          max_devices: int | None = None, cpu_offer: str | None = None, include_cpus: bool = True) -> Advice:
    """Rank the hardware for a training run: a dense network of ``dense_params`` parameters over
    ``n_examples`` examples (x ``tokens_per_example``), plus, for a sparse model such as a
    recommender, an embedding table of ``embedding_params`` values read ``lookups_per_example``
    rows of ``embedding_dim`` at a time.

    Dense part: 6·N·D FLOPs (``economics.training_flops``), mixed-precision Adam state
    (``memory.training_state_bytes``). Embedding table: ``embedding_bytes_per_param`` bytes per
    value (Adam would need 12); each lookup reads its row and reads and writes it again in the
    update (3 x dim x 4 bytes), at ``gather_efficiency`` of the memory bandwidth, because random
    rows use memory far worse than streaming. Activations and the all-to-all between GPUs holding
    shards of the table are left out: hours are a lower bound. mfu, cpu_mfu, max_devices,
    cpu_offer, embedding_bytes_per_param and gather_efficiency left None are the assumptions of
    those names.
    """
    mfu, cpu_mfu, max_devices, cpu_offer = _common(mfu, cpu_mfu, max_devices, cpu_offer)
    sparse = _defaults(embedding_bytes_per_param=embedding_bytes_per_param, gather_efficiency=gather_efficiency)
    embedding_bytes_per_param, gather_efficiency = sparse["embedding_bytes_per_param"], sparse["gather_efficiency"]
    dense_params = checks.number("dense_params", dense_params)
    n_examples = checks.number("n_examples", n_examples)
    tokens_per_example = checks.count("tokens_per_example", tokens_per_example)
    embedding_params = checks.number("embedding_params", embedding_params, strict=False)
    lookups = checks.count("lookups_per_example", lookups_per_example, minimum=0)
    embedding_dim = checks.count("embedding_dim", embedding_dim)
    embedding_bytes_per_param = checks.number("embedding_bytes_per_param", embedding_bytes_per_param)
    gather_efficiency = checks.number("gather_efficiency", gather_efficiency, maximum=1.0)
    if embedding_params and not lookups:
        raise ValueError("lookups_per_example=0: a model with an embedding table must look rows up (give >= 1)")
    if lookups and not embedding_params:
        raise ValueError("embedding_params=0: lookups_per_example needs an embedding table (give its size)")
    memory_bytes = memory.training_state_bytes(dense_params).total_bytes + embedding_params * embedding_bytes_per_param
    flops = economics.training_flops(dense_params, n_examples * tokens_per_example, "full")
    bytes_moved = n_examples * lookups * 3 * embedding_dim * memory.BYTES_PER_VALUE["fp32"]
    kind = "sparse" if embedding_params else "dense"
    advice = _run_options(f"{kind} training run, {dense_params:.3g} dense parameters"
                          + (f" + {embedding_params:.3g}-value embedding table" if embedding_params else "")
                          + f", {n_examples:.3g} examples", memory_bytes, flops, bytes_moved, _hardware(include_cpus),
                          mfu=mfu, cpu_mfu=cpu_mfu, max_devices=max_devices, cpu_offer=cpu_offer,
                          bandwidth_efficiency=gather_efficiency)
    return Advice(advice.job, advice.period, advice.options,
                  (("mfu", mfu), ("cpu_mfu", cpu_mfu), ("gather_efficiency", gather_efficiency),
                   ("embedding_bytes_per_param", embedding_bytes_per_param), ("max_devices", max_devices),
                   ("cpu_offer", cpu_offer),
                   ("memory_bytes", memory_bytes), ("flops", flops), ("bytes_moved", bytes_moved),
                   *advice.assumptions))


# --- serving: a monthly bill ----------------------------------------------------------------

def serve(model, requests_per_day, *, input_tokens: int | None = None, output_tokens: int | None = None,
          latency_target_s: float | None = None, precision: str | None = None, batch: int | None = None,
          utilisation: float | None = None, mfu: float | None = None, cpu_mfu: float | None = None,
          efficiency: float | None = None, max_devices: int | None = None, cpu_offer: str | None = None,
          cold_start_s: float | None = None, idle_timeout_s: float | None = None, max_workers: int | None = None,
          max_simulated_requests: int = 5000, seed: int = 0, include_cpus: bool = True) -> Advice:
    """Rank the ways to serve ``model`` (an ``llms`` name) for ``requests_per_day`` requests of
    ``input_tokens`` in and ``output_tokens`` out, each within ``latency_target_s``; cost per month.

    Always-on servers (CPU, each GPU): replicas of as many devices as hold the weights and one
    request's KV cache, each batching requests (continuous batching) up to the batch that keeps
    a request within the target (``serving.capacity``; ``batch`` fixes it instead); enough
    replicas that the average load uses at most ``utilisation`` of their requests/s, billed
    :data:`economics.HOURS_PER_MONTH` hours. Serverless (Runpod flex): each worker runs the same
    engine, up to the same batch (its concurrency), a request taking ``serving.estimate``'s
    latency at the batch it joins; each new worker paying a cold start
    (``serverless.cold_start`` of the weights, unless ``cold_start_s``), Poisson arrivals simulated
    by ``serverless.simulate`` over a window of at most ``max_simulated_requests`` requests (or a
    day) and scaled to a month; the class is timed on its slowest catalog GPU. APIs:
    ``economics.api_cost`` of the month's tokens (a different model: compare quality yourself).

    Every argument left None is an assumption from ``lab_utils.assumptions`` (not a
    measurement): precision ``precision.inference``, utilisation ``serve_utilisation``,
    efficiency ``decode_efficiency``, the cold start's parts ``cold_start.*``, and the others
    under their own names. ``mfu`` and ``cpu_mfu`` are checked and listed but the serving bounds
    use the peaks (``efficiency`` scales all of a request's time).
    """
    mfu, cpu_mfu, max_devices, cpu_offer = _common(mfu, cpu_mfu, max_devices, cpu_offer)
    taken = _defaults(input_tokens=input_tokens, output_tokens=output_tokens, latency_target_s=latency_target_s,
                      serve_utilisation=utilisation, decode_efficiency=efficiency,
                      idle_timeout_s=idle_timeout_s, max_workers=max_workers)
    taken["precision.inference"] = assumptions.precision_for("inference") if precision is None else precision
    precision, utilisation, efficiency = (taken["precision.inference"], taken["serve_utilisation"],
                                          taken["decode_efficiency"])
    input_tokens, output_tokens, latency_target_s = (taken["input_tokens"], taken["output_tokens"],
                                                     taken["latency_target_s"])
    idle_timeout_s, max_workers = taken["idle_timeout_s"], taken["max_workers"]
    if not isinstance(model, (str, llms.LLMConfig)):
        raise TypeError(f"model must be a model name from lab_utils.llms, got {type(model).__name__} {model!r}")
    config = llms.get(model) if isinstance(model, str) else model
    requests_per_day = checks.number("requests_per_day", requests_per_day)
    input_tokens = checks.count("input_tokens", input_tokens, minimum=0)
    output_tokens = checks.count("output_tokens", output_tokens)
    latency_target_s = checks.number("latency_target_s", latency_target_s)
    checks.choice("precision", precision, memory.precisions_for("inference"))
    batch = None if batch is None else checks.count("batch", batch)
    utilisation = checks.number("utilisation", utilisation, maximum=1.0)
    efficiency = checks.number("efficiency", efficiency, maximum=1.0)
    if cold_start_s is not None:
        cold_start_s = checks.number("cold_start_s", cold_start_s, strict=False)
    idle_timeout_s = checks.number("idle_timeout_s", idle_timeout_s, strict=False)
    max_workers = checks.count("max_workers", max_workers)
    max_simulated_requests = checks.count("max_simulated_requests", max_simulated_requests, minimum=10)

    bytes_per_param = memory.BYTES_PER_VALUE[precision]
    tokens_per_request = input_tokens + output_tokens
    output_share = output_tokens / tokens_per_request
    rate_per_s = requests_per_day / _SECONDS_PER_DAY
    tokens_per_month = rate_per_s * tokens_per_request * _SECONDS_PER_MONTH
    shape = dict(prompt_len=max(1, input_tokens), output_len=output_tokens, weight_bytes_per_param=bytes_per_param,
                 efficiency=efficiency)
    single = memory.job_estimate(config, method="inference", precision=precision, batch=1,
                                 seq_len=tokens_per_request).total_bytes
    options = []

    for spec in _hardware(include_cpus):
        kind = spec.kind
        price = assumptions.device_price(spec, cpu_offer=cpu_offer)
        per_replica = _devices_needed(single, spec)
        if per_replica == 0 or per_replica > max_devices:
            n = max(per_replica, 1)
            why = ("does not fit in one server's memory" if per_replica == 0 else
                   f"needs {per_replica} GPUs per replica: more than one server of {max_devices} (max_devices)")
            options.append(_not_possible(spec.name if n == 1 else f"{n} x {spec.name}", kind, spec, False, n,
                                         single, "memory", why, price))
            continue
        if _peak(spec)[1] is None or not spec.bandwidth_bytes_per_s:
            options.append(_not_possible(spec.name, kind, spec, True, per_replica, single, "compute",
                                         "the catalog has no peak or bandwidth to estimate its speed", price))
            continue
        replica = serving.replica(spec, per_replica)
        alone = serving.estimate(config, device=replica, batch=1, usd_per_hour=0.0, **shape)
        if batch is None:
            served = serving.capacity(config, device=replica, latency_target_s=latency_target_s, usd_per_hour=0.0,
                                      **shape) or alone
        else:
            served = serving.estimate(config, device=replica, batch=batch, usd_per_hour=0.0, **shape)
        replicas = max(1, math.ceil(rate_per_s / (served.requests_per_s * utilisation)))
        n = replicas * per_replica
        load = rate_per_s / (served.requests_per_s * replicas)
        if batch is None:  # the batch the average load fills, and its latency
            served = serving.at_load(config, device=replica, requests_per_s=rate_per_s / replicas, usd_per_hour=0.0,
                                     **shape) or served
        speed_bound = "compute" if served.limit == "compute" else "bandwidth"
        bound = "price" if replicas == 1 and load < utilisation / 2 else speed_bound
        name = spec.name if n == 1 else f"{n} x {spec.name}"
        why = None
        if served.latency_s > latency_target_s:
            why, bound = (f"a request takes {format_seconds(served.latency_s, 2)} at batch {served.batch} > the target",
                          speed_bound)
        elif price.usd_per_hour is None:
            why = "no price in the data for this device"
        cost = None if price.usd_per_hour is None else n * price.usd_per_hour * economics.HOURS_PER_MONTH
        options.append(Option(name=f"{name} always on", kind=kind, fits=True, n_devices=n,
                              hours=n * economics.HOURS_PER_MONTH, cost_usd=cost, bound=bound, why=why,
                              latency_s=served.latency_s,
                              memory_bytes=_batch_bytes(config, single, served.batch, tokens_per_request),
                              **_energy_fields(n * economics.HOURS_PER_MONTH, spec), **_price_fields(price)))

    # serverless: each worker batches requests as a pod does, up to the same batch
    window_s = min(_SECONDS_PER_DAY, max_simulated_requests / rate_per_s)
    arrivals = serverless.poisson_arrivals(rate_per_s, window_s, seed=seed)
    start = serverless.cold_start(config.n_params * bytes_per_param)
    if cold_start_s is None:
        cold_start_s = start.total_s
        taken.update(start.assumptions)
    else:
        taken["cold_start_s"] = cold_start_s
    for price in economics.serverless_prices():
        specs = [hardware.get(gpu) for gpu in price.gpus]
        if not specs:
            options.append(_not_possible(price.name, "serverless", None, False, 0, single, "memory",
                                         "its GPUs are not in the hardware catalog: speed and memory unknown",
                                         assumptions.DevicePrice(price.flex_per_hour, f"{price.name} flex",
                                                                 price.source, price.date)))
            continue
        spec = min(specs, key=lambda s: s.bandwidth_bytes_per_s)  # the slowest GPU of the class
        per_worker = memory.gpus_needed(single, spec)
        label = price.name if per_worker == 1 else f"{price.name}, {per_worker} GPUs per worker"
        flex = assumptions.DevicePrice(price.flex_per_hour * per_worker, f"{price.name} flex", price.source,
                                       price.date)
        if per_worker > max_devices:
            options.append(_not_possible(label, "serverless", spec, False, per_worker, single, "memory",
                                         f"needs {per_worker} GPUs per worker (> max_devices)", flex))
            continue
        worker = serving.replica(spec, per_worker)
        alone = serving.estimate(config, device=worker, batch=1, usd_per_hour=0.0, **shape)
        concurrency = _worker_batch(config, worker, batch, latency_target_s, shape)
        result = serverless.simulate(arrivals, service_s=serving.batch_latency(config, device=worker, **shape),
                                     concurrency=concurrency, cold_start_s=cold_start_s,
                                     idle_timeout_s=idle_timeout_s, max_workers=max_workers,
                                     price_per_worker_s=price.flex_per_s * per_worker)
        scale = _SECONDS_PER_MONTH / window_s
        p95 = result.p95_s if arrivals else alone.latency_s
        bound = ("cold starts" if p95 > 1.5 * alone.latency_s else
                 "compute" if alone.limit == "compute" else "bandwidth")
        why = None
        if p95 > latency_target_s:
            why = f"p95 latency {format_seconds(p95, 2)} > the target ({result.cold_starts} cold starts simulated)"
        options.append(Option(name=label, kind="serverless", fits=True, n_devices=per_worker,
                              hours=result.billed_s * scale / 3600, cost_usd=result.cost_usd * scale,
                              bound=bound, why=why, latency_s=p95,
                              memory_bytes=_batch_bytes(config, single, concurrency, tokens_per_request),
                              **_energy_fields(result.billed_s * scale / 3600 * per_worker, spec),
                              **_price_fields(flex)))

    for api in economics.api_prices():
        cost = economics.api_cost(tokens_per_month * (1 - output_share), tokens_per_month * output_share,
                                  price_in_per_million=api.input_per_million,
                                  price_out_per_million=api.output_per_million)
        options.append(Option(name=f"API: {api.name}", kind="api", fits=True, n_devices=0, hours=None,
                              cost_usd=cost, price_usd_per_hour=None, price_source=f"{api.provider}: {api.source}",
                              price_date=api.date, bound="price", latency_s=None))

    job = (f"serving {config.name}, {requests_per_day:,.0f} requests/day x ({input_tokens} in + {output_tokens} out) "
           f"tokens = {tokens_per_month:.3g} tokens/month")
    return Advice(job, "month", _rank(options),
                  (*taken.items(), ("mfu", mfu), ("cpu_mfu", cpu_mfu), ("max_devices", max_devices),
                   ("cpu_offer", cpu_offer), ("tokens_per_month", tokens_per_month),
                   ("simulated_window_s", window_s),
                   *((name, assumptions.value(name)) for name in ("power_share_of_tdp", "grid_kg_co2e_per_kwh"))))


def _batch_bytes(config, single_bytes: float, batch: int, tokens_per_request: int) -> float:
    """Bytes a replica holds serving ``batch`` requests: one request's (``single_bytes``) plus
    the KV caches of the other ``batch - 1``."""
    kv_bytes = memory.kv_cache_bytes(n_layers=config.n_layers, n_kv_heads=config.n_kv_heads,
                                     head_dim=config.head_dim, seq_len=tokens_per_request)
    return single_bytes + (batch - 1) * kv_bytes


def _worker_batch(config, worker, batch, latency_target_s, shape) -> int:
    """Requests one serverless worker serves at once: ``batch`` when given, else the batch that
    keeps a request within the target (``serving.capacity``), at least 1."""
    if batch is not None:
        return batch
    served = serving.capacity(config, device=worker, latency_target_s=latency_target_s, usd_per_hour=0.0, **shape)
    return served.batch if served else 1


# --- the picture: drawn by lab_utils.plots, re-exported here on first use ---------------------

def __getattr__(name):
    """``advisor.chart`` is ``plots.advice_chart`` (drawing lives in plots)."""
    if name == "chart":
        from lab_utils import plots

        return plots.advice_chart
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
