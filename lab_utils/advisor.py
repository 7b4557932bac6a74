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
serverless from ``lab_utils.serverless`` (simulate, cold_start), prices from
``lab_utils/data/prices.toml`` with their dates.

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

from lab_utils import (
    assumptions,
    checks,
    economics,
    energy,
    engines,
    hardware,
    llms,
    memory,
    prices,
    serverless,
    serving,
)
from lab_utils.units import format_seconds

__all__ = ["BOUNDS", "Advice", "Option", "fine_tune", "serve", "train"]

BOUNDS = ("memory", "compute", "bandwidth", "cold starts", "price")
"""What limits an option: it does not fit (memory), FLOP/s, bytes/s, serverless cold starts,
or the price of the smallest rental (the device idles most of the time)."""

_SECONDS_PER_DAY = 24 * prices.SECONDS_PER_HOUR
_SECONDS_PER_MONTH = economics.HOURS_PER_MONTH * prices.SECONDS_PER_HOUR


@dataclass(frozen=True)
class Option:
    """One way to run the job. Money in US dollars; ``cost`` is for the whole job (training)
    or per month (serving), None when it cannot be priced.

    ``hours``: wall-clock hours of the job (training; None for serving); ``device_hours``:
    device-hours billed per job, or per month for serving, every GPU (or CPU server) counted: a
    serverless worker of 2 GPUs busy for an hour bills 2 (None per token); ``usd_per_hour``: the
    price of one device-hour, so ``cost_usd`` = ``device_hours`` x ``usd_per_hour`` and
    ``energy_kwh`` is ``device_hours`` at the device's TDP. ``n_devices``: the devices the option
    runs on (serverless: the GPUs of one worker; workers start and stop with the traffic).
    ``latency_s``: seconds per request (serving: p95 for serverless, the estimate for a busy
    server); None for training. ``precision``: what a serving option runs the weights in;
    ``engine``: the serving engine whose profile times it (``lab_utils.engines``) and
    ``engine_notes`` the parts it leaves at the bound for want of a published figure.
    ``why``: None when the option works, else the reason it cannot. ``kind`` "hosted": the
    same open model sold per token; "api": a closed model (a different product).
    """

    name: str
    kind: str  # "cpu" | "gpu" | "serverless" | "hosted" | "api"
    fits: bool
    n_devices: int
    hours: float | None
    cost_usd: float | None
    usd_per_hour: float | None
    price_source: str
    price_date: str
    bound: str
    why: str | None = None
    latency_s: float | None = None
    memory_bytes: float | None = None
    energy_kwh: float | None = (
        None  # devices at their TDP over the job or month (lab_utils.energy); None: per token
    )
    emissions_kg: float | None = None  # CO2e of energy_kwh at the assumed grid intensity
    device_hours: float | None = None
    precision: str | None = None
    engine: str | None = None
    engine_notes: tuple[str, ...] = ()

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
        estimate, such as per-token prices, last). The verdict stays on dollars."""
        by = checks.choice("by", by, tuple(_RANK_KEYS))
        return dataclasses.replace(
            self, options=tuple(sorted(self.options, key=_RANK_KEYS[by])), ranked_by=by
        )

    @property
    def best(self) -> Option | None:
        """The cheapest working option (None when nothing works), whatever the order; a closed
        model's API never works for serving an open one (a different product)."""
        return self.cheapest(*{o.kind for o in self.options})

    def option(self, name: str) -> Option:
        """One option by its exact name."""
        for o in self.options:
            if o.name == name:
                return o
        raise ValueError(f"name={name!r} is not an option here; options: {[o.name for o in self.options]}")

    def cheapest(self, *kinds: str) -> Option | None:
        """The cheapest working option of these kinds ("gpu", "serverless", "hosted", ...);
        None when none works."""
        return min(
            (o for o in self.options if o.kind in kinds and o.works and o.cost_usd is not None),
            key=_cost_key,
            default=None,
        )

    @property
    def verdict(self) -> str:
        """The answer in plain words: the cheapest working option and, for serving, the cheapest
        of each other way (per token, serverless, always on) and the closed models, which are a
        different product."""
        best = self.best
        if best is None:
            return f"{self.job}: no option works under these assumptions."
        words = {
            "hosted": "the same open model bought per token",
            "cpu": "a CPU",
            "gpu": "a GPU" if best.n_devices == 1 else "GPUs",
            "serverless": "serverless GPUs",
        }[best.kind]
        said = (
            f"{self.job}: the answer is {words} — {best.name}"
            + (f" ({', '.join(filter(None, (best.precision, best.engine)))})" if best.precision else "")
            + f", ${best.cost_usd:,.2f} per {self.period} (price {best.price_date}, {best.price_source})."
        )
        if self.period != "month":
            return said
        others = []
        for kinds, label in (
            (("hosted",), "per token"),
            (("serverless",), "serverless"),
            (("gpu", "cpu"), "always on"),
        ):
            other = self.cheapest(*kinds)
            if other is not None and other is not best:
                others.append(f"{label}: {other.name} ${other.cost_usd:,.2f}")
            elif other is None and best.kind not in kinds and any(o.kind in kinds for o in self.options):
                others.append(f"{label}: none meets the target")
        closed = next((o for o in self.options if o.kind == "api" and o.cost_usd is not None), None)
        if closed is not None:
            others.append(
                f"a closed model's API such as {closed.name.removeprefix('API: ')} "
                f"(${closed.cost_usd:,.2f}) is a different product, not this model"
            )
        return said + (" Next: " + "; ".join(others) + "." if others else "")

    def table(self, limit: int | None = None) -> str:
        """The ranking as a text table (what the notebook and ``lab-utils pick`` print)."""
        from tabulate import tabulate

        serving_job = self.period == "month"
        rows = []
        for rank, o in enumerate(self.options[:limit], start=1):
            if serving_job:
                time = "-" if o.latency_s is None else format_seconds(o.latency_s)
            else:
                time = "-" if o.hours is None else format_seconds(o.hours * prices.SECONDS_PER_HOUR)
            cost = "-" if not o.fits else "no price" if o.cost_usd is None else f"{o.cost_usd:,.2f}"
            extra = [o.precision or "-", o.engine or "-"] if serving_job else []
            rows.append(
                (
                    rank,
                    o.name,
                    o.n_devices,
                    "yes" if o.fits else "no",
                    time,
                    cost,
                    *extra,
                    _number(o.energy_kwh),
                    _number(o.emissions_kg),
                    o.bound,
                    o.price_date if o.fits else "-",
                    o.why or "",
                )
            )
        extra_headers = ("precision", "engine") if serving_job else ()
        headers = (
            "#",
            "option",
            "n",
            "fits",
            "time",
            f"$ per {self.period}",
            *extra_headers,
            f"kWh per {self.period}",
            "kg CO2e",
            "bound",
            "price date",
            "why not",
        )
        note = "time: request latency" if serving_job else "time: wall clock of the job"
        return (
            tabulate(
                rows,
                headers=headers,
                tablefmt="simple",
                disable_numparse=True,
                colalign=(
                    "right",
                    "left",
                    "right",
                    "left",
                    "right",
                    "right",
                    *(("left", "left") if serving_job else ()),
                    "right",
                    "right",
                    "left",
                    "left",
                    "left",
                ),
            )
            + f"\n({note}; kWh: the devices at their TDP, no building overhead (PUE)"
            + ("; per-token prices publish none" if serving_job else "")
            + "; estimates from vendor specs and list prices)"
            + "".join(
                f"\n({note})" for note in dict.fromkeys(n for o in self.options for n in o.engine_notes)
            )
            + "".join(
                f"\n(serverless starts, as serverless.cold_start: {starts})"
                for name, starts in self.assumptions
                if name == "serverless_starts"
            )
        )

    def to_dict(self) -> dict:
        """Plain data for JSON."""
        from dataclasses import asdict

        return {
            "job": self.job,
            "period": self.period,
            "verdict": self.verdict,
            "ranked_by": self.ranked_by,
            "assumptions": {k: v for k, v in self.assumptions},
            "options": [dict(asdict(o), works=o.works) for o in self.options],
        }


def _number(value) -> str:
    """A table cell: thousands separators, at most 3 significant digits, never an exponent."""
    if value is None:
        return "-"
    digits = max(0, 2 - math.floor(math.log10(abs(value)))) if value else 0
    return f"{round(value, digits):,.{digits}f}"


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
    return (
        not o.works,
        o.cost_usd is None,
        o.cost_usd if o.cost_usd is not None else math.inf,
        time,
        o.n_devices,
        o.name,
    )


def _energy_key(o: Option):
    return (
        not o.works,
        o.energy_kwh is None,
        o.energy_kwh if o.energy_kwh is not None else math.inf,
        *_cost_key(o)[1:],
    )


_RANK_KEYS = {"cost": _cost_key, "energy": _energy_key}


def _rank(options) -> tuple[Option, ...]:
    return tuple(sorted(options, key=_cost_key))


def _energy_fields(device_hours: float, spec: hardware.Spec) -> dict:
    """energy_kwh and emissions_kg of ``device_hours`` of ``spec`` at its TDP (lab_utils.energy);
    None without a TDP."""
    kwh = energy.job_energy_kwh(device_hours, 1, spec.tdp_watts) if spec.tdp_watts else None
    return _emissions(kwh)


def _emissions(kwh: float | None) -> dict:
    return {"energy_kwh": kwh, "emissions_kg": None if kwh is None else energy.emissions_kg(kwh)}


def _price_fields(price: assumptions.DevicePrice) -> dict:
    source = "-" if price.usd_per_hour is None and price.source == "-" else f"{price.offer} ({price.source})"
    return {"usd_per_hour": price.usd_per_hour, "price_source": source, "price_date": price.date}


def _not_possible(name, *, kind, fits, n, bytes_, bound, why, price=_NO_PRICE, precision=None):
    return Option(
        name=name,
        kind=kind,
        fits=fits,
        n_devices=n,
        hours=None,
        cost_usd=None,
        bound=bound,
        why=why,
        memory_bytes=bytes_,
        precision=precision,
        **_price_fields(price),
    )


def _common(mfu, cpu_mfu, max_devices, cpu_offer):
    """The checked (mfu, cpu_mfu, max_devices, cpu_offer), defaults from the assumptions."""
    values, _ = assumptions.resolve(mfu=mfu, cpu_mfu=cpu_mfu, max_devices=max_devices, cpu_offer=cpu_offer)
    return (
        checks.number("mfu", values["mfu"], maximum=1.0),
        checks.number("cpu_mfu", values["cpu_mfu"], maximum=1.0),
        checks.count("max_devices", values["max_devices"]),
        _cpu_offer(values["cpu_offer"]),
    )


def _model(model, name="model"):
    """An LLMConfig for a catalog name, or None with the parameter count for a bare number."""
    if isinstance(model, str):
        return llms.get(model), None
    if isinstance(model, llms.LLMConfig):
        return model, None
    return None, checks.number(name, model)


# --- time-bound jobs: one fine-tune or training run -----------------------------------------


def _run_options(
    label,
    memory_bytes,
    flops,
    bytes_moved,
    specs,
    *,
    mfu,
    cpu_mfu,
    max_devices,
    cpu_offer,
    bandwidth_efficiency,
    servers=False,
):
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
            options.append(
                _not_possible(
                    spec.name,
                    kind=kind,
                    fits=False,
                    n=1,
                    bytes_=memory_bytes,
                    bound="memory",
                    why="does not fit in one server's memory",
                    price=price,
                )
            )
            continue
        if n > max_devices and not servers:
            options.append(
                _not_possible(
                    f"{n} x {spec.name}",
                    kind=kind,
                    fits=False,
                    n=n,
                    bytes_=memory_bytes,
                    bound="memory",
                    why=f"needs {n} GPUs to hold the job: more than one "
                    f"server of {max_devices} (max_devices)",
                    price=price,
                )
            )
            continue
        name = spec.name if n == 1 else f"{n} x {spec.name}"
        if n > max_devices:
            n = math.ceil(n / max_devices) * max_devices
            name, price = (
                f"{n} x {spec.name} ({n // max_devices} servers)",
                assumptions.device_price(spec, n_gpus=n),
            )
        if peak is None or (bytes_moved and not spec.bandwidth_bytes_per_s):
            options.append(
                _not_possible(
                    name,
                    kind=kind,
                    fits=True,
                    n=n,
                    bytes_=memory_bytes,
                    bound="compute",
                    why="the catalog has no peak or bandwidth to estimate its speed",
                    price=price,
                )
            )
            continue
        gpu_mfu = mfu(n, dtype) if callable(mfu) else mfu
        compute_h = economics.training_hours(
            flops, peak_flops=peak, mfu=cpu_mfu if kind == "cpu" else gpu_mfu, n_devices=n
        )
        bandwidth_h = (
            (bytes_moved / (spec.bandwidth_bytes_per_s * bandwidth_efficiency * n) / prices.SECONDS_PER_HOUR)
            if bytes_moved
            else 0.0
        )
        hours = max(compute_h, bandwidth_h)
        bound = "bandwidth" if bandwidth_h > compute_h else "compute"
        why = None if price.usd_per_hour is not None else "no price in the data for this device"
        options.append(
            Option(
                name=name,
                kind=kind,
                fits=True,
                n_devices=n,
                hours=hours,
                device_hours=hours * n,
                cost_usd=None if price.usd_per_hour is None else hours * n * price.usd_per_hour,
                bound=bound,
                why=why,
                memory_bytes=memory_bytes,
                **_energy_fields(hours * n, spec),
                **_price_fields(price),
            )
        )
    return Advice(
        job=label,
        period="job",
        options=_rank(options),
        assumptions=tuple(
            (name, assumptions.value(name)) for name in ("power_share_of_tdp", "grid_kg_co2e_per_kwh")
        ),
    )


def _fine_tune_option(config, n_tokens, method, spec, mfu, job, max_devices) -> Option:
    """One GPU's option for a fine-tune: ``economics.fine_tune_estimate`` on it, as an Option."""
    try:
        estimate = economics.fine_tune_estimate(
            config,
            n_tokens,
            method=method,
            gpu=spec,
            mfu=mfu,
            seq_len=job["seq_len"],
            batch=job["batch"],
            recompute=job["recompute_fine_tune"],
            lora_rank=job["lora_rank"],
            max_devices=max_devices,
        )
    except economics.DoesNotFit as why:
        return _not_possible(
            spec.name, kind="gpu", fits=False, n=1, bytes_=None, bound="memory", why=str(why)
        )
    except ValueError as why:  # no peak in a dtype the course computes in
        return _not_possible(
            spec.name, kind="gpu", fits=True, n=1, bytes_=None, bound="compute", why=str(why)
        )
    n = estimate.n_gpus
    if estimate.n_nodes > 1 and estimate.usd_per_gpu_hour is None:  # e.g. a laptop's GPU: no servers of it
        return _not_possible(
            f"{n} x {spec.name}",
            kind="gpu",
            fits=False,
            n=n,
            bytes_=estimate.memory_bytes,
            bound="memory",
            why=f"needs {n} GPUs: more than one server, and the data has no offer to rent it by the server",
        )
    name = (
        spec.name
        if n == 1
        else f"{n} x {spec.name}" + (f" ({estimate.n_nodes} servers)" if estimate.n_nodes > 1 else "")
    )
    return Option(
        name=name,
        kind="gpu",
        fits=True,
        n_devices=n,
        hours=estimate.hours,
        device_hours=estimate.gpu_hours,
        cost_usd=estimate.cost_usd,
        bound="compute",
        why=None if estimate.cost_usd is not None else "no price in the data for this device",
        memory_bytes=estimate.memory_bytes,
        **_emissions(estimate.energy_kwh),
        usd_per_hour=estimate.usd_per_gpu_hour,
        price_source="-" if estimate.usd_per_gpu_hour is None else estimate.price_source,
        price_date=estimate.price_date if estimate.usd_per_gpu_hour is not None else "-",
    )


def fine_tune(
    model,
    n_tokens,
    *,
    method: str | None = None,
    mfu: float | None = None,
    cpu_mfu: float | None = None,
    seq_len: int | None = None,
    batch: int | None = None,
    recompute: str | None = None,
    lora_rank: int | None = None,
    max_devices: int | None = None,
    cpu_offer: str | None = None,
    include_cpus: bool = True,
) -> Advice:
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
    (``assumptions.device_price`` with ``n_gpus``). Every argument left None is the assumption of
    the same name in ``lab_utils.assumptions`` (seq_len: ``seq_len``; batch: ``batch``;
    recompute: ``recompute_fine_tune``).
    """
    method = checks.choice(
        "method",
        assumptions.resolve(default_method=method)[0]["default_method"],
        assumptions.FINE_TUNE_METHODS,
    )
    regimes = mfu is None
    mfu, cpu_mfu, max_devices, cpu_offer = _common(mfu, cpu_mfu, max_devices, cpu_offer)
    if regimes:  # each GPU option at its regime's MFU: one GPU, several (FSDP/ZeRO), FP8
        mfu = None

        def gpu_mfu(n_gpus, dtype):
            return assumptions.value(economics.mfu_assumption(n_gpus, dtype))

    job, _ = assumptions.resolve(
        seq_len=seq_len, batch=batch, recompute_fine_tune=recompute, lora_rank=lora_rank
    )
    n_tokens = checks.number("n_tokens", n_tokens)
    config, n_params = _model(model)
    precision = assumptions.precision_for(method)
    if config is not None:
        estimate = memory.job_estimate(
            config,
            method=method,
            precision=precision,
            batch=job["batch"],
            seq_len=job["seq_len"],
            recompute=job["recompute_fine_tune"],
            lora_rank=job["lora_rank"],
        )
        memory_bytes, n_compute, label = estimate.total_bytes, config.params_per_token, config.name
    else:  # a bare count: the weights and training state it tells of, a lower bound
        memory_bytes = sum(value for _, value in memory.param_count_parts(n_params, method, precision))
        n_compute, label = n_params, f"{n_params:.3g}-parameter model"
    shape = {}
    if config is not None and config.n_heads is not None:
        shape = dict(model=config, seq_len=job["seq_len"], attention_term=assumptions.value("attention_term"))
    flops = economics.training_flops(n_compute, n_tokens, method, **shape)
    specs = _hardware(include_cpus)
    gpu_options = []
    if config is not None:  # a catalog model: each GPU is economics.fine_tune_estimate's answer
        gpu_options = [
            _fine_tune_option(config, n_tokens, method, spec, mfu, job, max_devices)
            for spec in specs
            if spec.kind == "gpu"
        ]
        specs = tuple(spec for spec in specs if spec.kind != "gpu")
    advice = _run_options(
        f"{method} fine-tune of {label} on {n_tokens:.3g} tokens",
        memory_bytes,
        flops,
        0.0,
        specs,
        mfu=gpu_mfu if regimes else mfu,
        cpu_mfu=cpu_mfu,
        max_devices=max_devices,
        cpu_offer=cpu_offer,
        bandwidth_efficiency=1.0,
        servers=True,
    )
    return Advice(
        advice.job,
        advice.period,
        _rank((*advice.options, *gpu_options)),
        (
            (f"precision.{method}", precision),
            *((name, assumptions.value(name)) for name in ("mfu_single_gpu", "mfu_multi_gpu") if regimes),
            *((("mfu", mfu),) if not regimes else ()),
            *((("attention_term", shape["attention_term"]),) if shape else ()),
            ("cpu_mfu", cpu_mfu),
            *job.items(),
            ("max_devices", max_devices),
            ("cpu_offer", cpu_offer),
            ("memory_bytes", memory_bytes),
            ("flops", flops),
            *advice.assumptions,
        ),
    )


def train(
    dense_params,
    n_examples,
    *,
    tokens_per_example: int = 1,
    embedding_params: float = 0,
    lookups_per_example: int = 0,
    embedding_dim: int = 128,
    embedding_bytes_per_param: float | None = None,
    mfu: float | None = None,
    cpu_mfu: float | None = None,
    gather_efficiency: float | None = None,
    max_devices: int | None = None,
    cpu_offer: str | None = None,
    include_cpus: bool = True,
) -> Advice:
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
    sparse, _ = assumptions.resolve(
        embedding_bytes_per_param=embedding_bytes_per_param, gather_efficiency=gather_efficiency
    )
    embedding_bytes_per_param, gather_efficiency = (
        sparse["embedding_bytes_per_param"],
        sparse["gather_efficiency"],
    )
    dense_params = checks.number("dense_params", dense_params)
    n_examples = checks.number("n_examples", n_examples)
    tokens_per_example = checks.count("tokens_per_example", tokens_per_example)
    embedding_params = checks.number("embedding_params", embedding_params, strict=False)
    lookups = checks.count("lookups_per_example", lookups_per_example, minimum=0)
    embedding_dim = checks.count("embedding_dim", embedding_dim)
    embedding_bytes_per_param = checks.number("embedding_bytes_per_param", embedding_bytes_per_param)
    gather_efficiency = checks.number("gather_efficiency", gather_efficiency, maximum=1.0)
    if embedding_params and not lookups:
        raise ValueError(
            "lookups_per_example=0: a model with an embedding table must look rows up (give >= 1)"
        )
    if lookups and not embedding_params:
        raise ValueError("embedding_params=0: lookups_per_example needs an embedding table (give its size)")
    memory_bytes = (
        memory.training_state_bytes(dense_params).total_bytes + embedding_params * embedding_bytes_per_param
    )
    flops = economics.training_flops(dense_params, n_examples * tokens_per_example, "full")
    bytes_moved = n_examples * lookups * 3 * embedding_dim * memory.BYTES_PER_VALUE["fp32"]
    kind = "sparse" if embedding_params else "dense"
    advice = _run_options(
        f"{kind} training run, {dense_params:.3g} dense parameters"
        + (f" + {embedding_params:.3g}-value embedding table" if embedding_params else "")
        + f", {n_examples:.3g} examples",
        memory_bytes,
        flops,
        bytes_moved,
        _hardware(include_cpus),
        mfu=mfu,
        cpu_mfu=cpu_mfu,
        max_devices=max_devices,
        cpu_offer=cpu_offer,
        bandwidth_efficiency=gather_efficiency,
    )
    return Advice(
        advice.job,
        advice.period,
        advice.options,
        (
            ("mfu", mfu),
            ("cpu_mfu", cpu_mfu),
            ("gather_efficiency", gather_efficiency),
            ("embedding_bytes_per_param", embedding_bytes_per_param),
            ("max_devices", max_devices),
            ("cpu_offer", cpu_offer),
            ("memory_bytes", memory_bytes),
            ("flops", flops),
            ("bytes_moved", bytes_moved),
            *advice.assumptions,
        ),
    )


# --- serving: a monthly bill ----------------------------------------------------------------


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
        efficiency=1.0 if efficiency is None else checks.number("efficiency", efficiency, maximum=1.0),
        engine=None if engine is None else engines.get(engine).name,
        max_devices=checks.count("max_devices", values["max_devices"]),
        price_bound_load_share=values["price_bound_load_share"],
        cold_start_bound_ratio=values["cold_start_bound_ratio"],
    )
    cpu_offer = _cpu_offer(values["cpu_offer"])
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
    specs = _hardware(include_cpus)
    if devices is not None:
        if isinstance(devices, str) or not all(isinstance(d, (str, hardware.Spec)) for d in devices):
            raise TypeError(f"devices must be a list of catalog device names, got {devices!r}")
        names = {hardware.as_spec(d).name for d in devices}
        specs = tuple(s for s in specs if s.name in names)
    options = [
        *_always_on(job, specs, cpu_offer),
        *_serverless(job, cold_start_s, taken, {s.name for s in specs}, **simulation),
        *_per_token(job),
    ]
    tokens_per_month = job.rate_per_s * job.tokens_per_request * _SECONDS_PER_MONTH
    label = (
        f"serving {config.name}, {requests_per_day:,.0f} requests/day x ({job.input_tokens} in + "
        f"{job.output_tokens} out) tokens = {tokens_per_month:.3g} tokens/month"
    )
    return Advice(
        label,
        "month",
        _rank(options),
        (
            *taken.items(),
            ("tokens_per_month", tokens_per_month),
            *((name, assumptions.value(name)) for name in ("power_share_of_tdp", "grid_kg_co2e_per_kwh")),
        ),
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

    def served_batch(self, device, precision: str):
        """``serving.estimate`` at the batch a replica runs: ``batch`` when given, else the
        largest that keeps a request within the target (``serving.capacity``), at least 1."""
        shape = self.shape(precision)
        if self.batch is not None:
            return serving.estimate(self.config, device=device, batch=self.batch, usd_per_hour=0.0, **shape)
        return serving.capacity(
            self.config, device=device, latency_target_s=self.latency_target_s, usd_per_hour=0.0, **shape
        ) or serving.estimate(self.config, device=device, batch=1, usd_per_hour=0.0, **shape)


def _cpu_offer(cpu_offer) -> str:
    if not isinstance(cpu_offer, str):
        raise TypeError(f"cpu_offer must be a str naming an hourly offer, got {type(cpu_offer).__name__}")
    prices.hourly_price(cpu_offer)  # an unknown name fails here, listing the offers
    return cpu_offer


def _best_precision(candidates: list[Option]) -> Option:
    """The cheapest working option of one device, the better precision first on a tie (the
    candidates come in quality order); the first one when none works."""
    working = [o for o in candidates if o.works and o.cost_usd is not None]
    return min(working, key=lambda o: o.cost_usd) if working else candidates[0]


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
    per_replica = _devices_needed(single, spec)
    common = dict(kind=spec.kind, price=price, precision=precision, bytes_=single)
    if per_replica == 0 or per_replica > job.max_devices:
        n = max(per_replica, 1)
        why = (
            "does not fit in one server's memory"
            if per_replica == 0
            else f"needs {per_replica} GPUs per replica: "
            f"more than one server of {job.max_devices} (max_devices)"
        )
        return _not_possible(
            spec.name if n == 1 else f"{n} x {spec.name}", fits=False, n=n, bound="memory", why=why, **common
        )
    if _peak(spec)[1] is None or not spec.bandwidth_bytes_per_s:
        return _not_possible(
            spec.name,
            fits=True,
            n=per_replica,
            bound="compute",
            why="the catalog has no peak or bandwidth to estimate its speed",
            **common,
        )
    replica = serving.replica(spec, per_replica)
    served = job.served_batch(replica, precision)
    replicas = max(1, math.ceil(job.rate_per_s / (served.requests_per_s * job.utilisation)))
    n = replicas * per_replica
    load = job.rate_per_s / (served.requests_per_s * replicas)
    if job.batch is None:  # the batch the average load fills, and its latency
        served = (
            serving.at_load(
                job.config,
                device=replica,
                requests_per_s=job.rate_per_s / replicas,
                usd_per_hour=0.0,
                **job.shape(precision),
            )
            or served
        )
    speed_bound = "compute" if served.limit == "compute" else "bandwidth"
    idle = replicas == 1 and load < job.utilisation * job.price_bound_load_share
    bound = "price" if idle else speed_bound
    why = None
    if served.latency_s > job.latency_target_s:
        why, bound = (
            f"a request takes {format_seconds(served.latency_s, 2)} at batch {served.batch} > the target",
            speed_bound,
        )
    elif price.usd_per_hour is None:
        why = "no price in the data for this device"
    hours = n * economics.HOURS_PER_MONTH
    return Option(
        name=f"{spec.name if n == 1 else f'{n} x {spec.name}'} always on",
        kind=spec.kind,
        fits=True,
        n_devices=n,
        hours=None,
        device_hours=hours,
        cost_usd=None if price.usd_per_hour is None else hours * price.usd_per_hour,
        bound=bound,
        why=why,
        latency_s=served.latency_s,
        memory_bytes=job.batch_bytes(precision, served.batch),
        precision=precision,
        engine=served.engine,
        engine_notes=served.engine_notes,
        **_energy_fields(hours, spec),
        **_price_fields(price),
    )


def _serverless(
    job: _ServeJob,
    cold_start_s,
    taken: dict,
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
    taken["simulated_window_s"] = window_s
    every_gpu = {s.name for s in hardware.catalog("gpu")} <= device_names
    starts_by_precision = {}  # the cold start of each precision some class kept (its plain start, restores)
    options = []
    for price in prices.serverless_prices():
        specs = [hardware.get(gpu) for gpu in price.gpus]
        if not (every_gpu or any(s.name in device_names for s in specs)):
            continue
        if not specs:
            options.append(
                _not_possible(
                    price.name,
                    kind="serverless",
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
                job.config.n_params * memory.BYTES_PER_VALUE[precision]
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
        taken["serverless_starts"] = (
            "plain start "
            + ", ".join(f"{start.total_s:.0f} s in {p}" for p, start in starts_by_precision.items())
            + f"; a snapshot restore (FlashBoot) {restore.restore_s:g} s "
            f"for {restore.restore_hit_rate:.0%} of starts"
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
        return _not_possible(
            label,
            kind="serverless",
            fits=False,
            n=per_worker,
            bound="memory",
            bytes_=single,
            precision=precision,
            why=f"needs {per_worker} GPUs per worker (> max_devices)",
            price=flex,
        )
    worker = serving.replica(spec, per_worker)
    shape = job.shape(precision)
    alone = serving.estimate(job.config, device=worker, batch=1, usd_per_hour=0.0, **shape)
    concurrency = job.served_batch(worker, precision).batch if job.batch is None else job.batch
    result = serverless.simulate(
        arrivals,
        service_s=serving.batch_latency(job.config, device=worker, **shape),
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
        fits=True,
        n_devices=per_worker,
        hours=None,
        device_hours=device_hours,
        cost_usd=result.cost_usd * scale,
        bound=bound,
        why=why,
        latency_s=p95,
        memory_bytes=job.batch_bytes(precision, concurrency),
        precision=precision,
        engine=alone.engine,
        engine_notes=alone.engine_notes,
        **_energy_fields(device_hours, spec),
        **_price_fields(flex),
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
                fits=True,
                n_devices=0,
                hours=None,
                cost_usd=cost,
                usd_per_hour=None,
                price_source=f"{api.provider}: {api.source}",
                price_date=api.date_label,
                bound="price",
                latency_s=None,
                why=None if hosted else f"a closed model, not {job.config.name}: a different product",
            )
        )
    return options
