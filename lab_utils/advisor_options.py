"""The advisor's answer as data: :class:`Option` (one way to run a job), :class:`Advice` (every
option for one job, ranked) and :class:`Verdict` (the answer, structured, with the one renderer
the command line, the notebooks, the widgets and the website print).

Money and energy carry their period in their names: a training job's options fill the
``*_per_job`` fields, a serving job's the ``*_per_month`` fields. ``Advice`` keeps three things
apart: the ``assumptions`` it took (defaults from ``lab_utils/data/assumptions.toml``), the
values ``given`` by the caller, and the results ``derived`` on the way (memory, FLOPs, tokens
per month). No arithmetic beyond sorting and formatting. Pure Python: no torch.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from lab_utils import assumptions, checks, energy, hardware, memory, prices
from lab_utils.units import format_seconds

__all__ = [
    "BOUNDS",
    "PERIODS",
    "Advice",
    "Option",
    "Verdict",
    "catalog_devices",
    "checked_cpu_offer",
    "devices_needed",
    "not_possible",
    "period_fields",
    "price_fields",
]

BOUNDS = ("memory", "compute", "bandwidth", "cold starts", "price", "interconnect", "network")
"""What limits an option: it does not fit (memory), FLOP/s, bytes/s, serverless cold starts,
the price of the smallest rental (the device idles most of the time), or the GPUs' exchanges
taking longer than their compute: inside one server (interconnect: PCIe or NVLink) or across
servers (network). An option bound by its communication is never ranked first while another works
(:func:`_first_not_waiting`)."""

_COMMUNICATION = ("interconnect", "network")

PERIODS = ("job", "month")
"""What an option's money and energy cover: one training job, or a month of serving."""


@dataclass(frozen=True)
class Option:
    """One way to run the job. Money in US dollars, energy in kWh, each named by its period
    (``period``: "job" or "month"): the fields of the other period stay None, as does a
    figure that cannot be estimated (no price, no TDP).

    ``device``: the catalog device it runs on (None: a per-token price); ``n_devices``: how many
    (serverless: the GPUs of one worker, workers start and stop with the traffic; 0 per token).
    ``hours``: wall-clock hours of the job (training; None for serving). ``device_hours_*``:
    device-hours billed, every GPU (or CPU server) counted, so ``cost_*_usd`` =
    ``device_hours_*`` x ``usd_per_hour`` and ``energy_*_kwh`` is ``device_hours_*`` at the
    device's TDP (``lab_utils.energy``). ``latency_s``: seconds per request (serving: the p95 at
    the rate, from the replica simulator; serverless adds each request's wait for a worker).
    ``precision``: what a serving option runs the weights in; ``engine``: the serving engine
    whose profile times it (``lab_utils.engines``),
    ``engine_notes`` the parts it leaves at the bound. ``why``: None when the option works, else
    the reason it cannot. ``kind`` "hosted": the same open model sold per token; "api": a closed
    model (a different product).
    """

    name: str
    kind: str  # "cpu" | "gpu" | "serverless" | "hosted" | "api"
    device: str | None
    n_devices: int
    period: str
    fits: bool
    usd_per_hour: float | None
    price_source: str
    price_date: str
    bound: str
    hours: float | None = None
    cost_per_job_usd: float | None = None
    cost_per_month_usd: float | None = None
    energy_per_job_kwh: float | None = None
    energy_per_month_kwh: float | None = None
    emissions_per_job_kg: float | None = None  # CO2e of the energy at the assumed grid intensity
    emissions_per_month_kg: float | None = None
    device_hours_per_job: float | None = None
    device_hours_per_month: float | None = None
    why: str | None = None
    latency_s: float | None = None
    memory_bytes: float | None = None
    precision: str | None = None
    engine: str | None = None
    engine_notes: tuple[str, ...] = ()

    def __post_init__(self):
        checks.choice("period", self.period, PERIODS)
        checks.choice("bound", self.bound, BOUNDS)

    @property
    def works(self) -> bool:
        return self.why is None


def period_fields(period: str, *, cost_usd=None, energy_kwh=None, device_hours=None) -> dict:
    """The Option keywords of ``period`` for these figures (emissions of ``energy_kwh`` at the
    assumed grid intensity): ``Option(..., **period_fields("month", cost_usd=...))``."""
    period = checks.choice("period", period, PERIODS)
    kg = None if energy_kwh is None else energy.emissions_kg(energy_kwh)
    return {
        "period": period,
        f"cost_per_{period}_usd": cost_usd,
        f"energy_per_{period}_kwh": energy_kwh,
        f"emissions_per_{period}_kg": kg,
        f"device_hours_per_{period}": device_hours,
    }


def price_fields(price: assumptions.DevicePrice) -> dict:
    """The Option keywords of the price that stands for a device."""
    source = "-" if price.usd_per_hour is None and price.source == "-" else f"{price.offer} ({price.source})"
    return {"usd_per_hour": price.usd_per_hour, "price_source": source, "price_date": price.date}


NO_PRICE = assumptions.DevicePrice(None, "-", "-", "-")


def not_possible(name, *, kind, device, period, fits, n, bytes_, bound, why, price=NO_PRICE, precision=None):
    """An option that cannot work (``why``), priced for reference where the data has a price."""
    return Option(
        name=name,
        kind=kind,
        device=device,
        n_devices=n,
        period=period,
        fits=fits,
        bound=bound,
        why=why,
        memory_bytes=bytes_,
        precision=precision,
        **price_fields(price),
    )


def devices_needed(n_bytes: float, spec: hardware.Spec) -> int:
    """GPUs to hold ``n_bytes`` (memory.gpus_needed); a CPU server holds it or not (1 or 0)."""
    if spec.kind == "gpu":
        return memory.gpus_needed(n_bytes, spec)
    return 1 if n_bytes <= spec.memory_bytes else 0


def catalog_devices(include_cpus: bool) -> tuple[hardware.Spec, ...]:
    """Every catalog GPU, and the catalog CPUs with a published peak (a server to rent; the
    Colab CPU runtime, with none, is left out)."""
    cpus = tuple(s for s in hardware.catalog("cpu") if s.peak_flops) if include_cpus else ()
    return hardware.catalog("gpu") + cpus


def checked_cpu_offer(cpu_offer) -> str:
    """``cpu_offer`` checked: the name of an hourly offer in the price data."""
    if not isinstance(cpu_offer, str):
        raise TypeError(f"cpu_offer must be a str naming an hourly offer, got {type(cpu_offer).__name__}")
    prices.hourly_price(cpu_offer)  # an unknown name fails here, listing the offers
    return cpu_offer


def _cost(o: Option) -> float | None:
    return getattr(o, f"cost_per_{o.period}_usd")


def _energy(o: Option) -> float | None:
    return getattr(o, f"energy_per_{o.period}_kwh")


def _cost_key(o: Option):
    time = o.latency_s if o.latency_s is not None else (o.hours if o.hours is not None else math.inf)
    cost = _cost(o)
    return (not o.works, cost is None, cost if cost is not None else math.inf, time, o.n_devices, o.name)


def _energy_key(o: Option):
    kwh = _energy(o)
    return (not o.works, kwh is None, kwh if kwh is not None else math.inf, *_cost_key(o)[1:])


_RANK_KEYS = {"cost": _cost_key, "energy": _energy_key}


def _first_not_waiting(options: list[Option]) -> tuple[Option, ...]:
    """``options`` (ranked) with the first working one whose GPUs do not wait on their exchanges
    more than they compute moved ahead of any that do: such an option may be cheap on paper, but
    it is shown (its bound "interconnect" or "network"), not recommended."""
    ranked = list(options)
    first = next((i for i, o in enumerate(ranked) if o.works and o.bound not in _COMMUNICATION), None)
    if first is not None:
        ranked.insert(0, ranked.pop(first))
    return tuple(ranked)


_WORDS = {"hosted": "the same open model bought per token", "cpu": "a CPU", "serverless": "serverless GPUs"}

_SERVING_WAYS = ((("hosted",), "per token"), (("serverless",), "serverless"), (("gpu", "cpu"), "always on"))
"""The ways to serve a model the verdict names beside the answer: (kinds, label)."""


@dataclass(frozen=True)
class Verdict:
    """The answer as data: the cheapest working option ``best`` (None when nothing works) and,
    for serving, ``others``: (way, its cheapest working option, or None when none of that way
    meets the target) for each other way, and ``closed``: a closed model's API, a different
    product. :meth:`text` is the one way it is written (``str(verdict)``); :attr:`headline` its
    first sentence without the price's source."""

    job: str
    period: str
    best: Option | None
    others: tuple[tuple[str, Option | None], ...] = ()
    closed: Option | None = None

    @property
    def headline(self) -> str:
        """'job: the answer is ... — option (precision, engine), $X per period'."""
        best = self.best
        if best is None:
            return f"{self.job}: no option works under these assumptions"
        words = _WORDS.get(best.kind) or ("a GPU" if best.n_devices == 1 else "GPUs")
        detail = ", ".join(filter(None, (best.precision, best.engine)))
        return (
            f"{self.job}: the answer is {words} — {best.name}"
            + (f" ({detail})" if best.precision else "")
            + f", ${_cost(best):,.2f} per {self.period}"
        )

    def text(self) -> str:
        """The verdict in plain words: the headline, the price's date and source, then the other
        ways and the closed models."""
        best = self.best
        if best is None:
            return self.headline + "."
        said = f"{self.headline} (price {best.price_date}, {best.price_source})."
        others = [
            f"{label}: none meets the target" if o is None else f"{label}: {o.name} ${_cost(o):,.2f}"
            for label, o in self.others
        ]
        if self.closed is not None:
            others.append(
                f"a closed model's API such as {self.closed.name.removeprefix('API: ')} "
                f"(${_cost(self.closed):,.2f}) is a different product, not this model"
            )
        return said + (" Next: " + "; ".join(others) + "." if others else "")

    __str__ = text

    def to_dict(self) -> dict:
        """Plain data for JSON: the option names and dollars, and the text."""
        name = lambda o: None if o is None else o.name  # noqa: E731
        return {
            "best": name(self.best),
            f"cost_per_{self.period}_usd": None if self.best is None else _cost(self.best),
            "others": {label: name(o) for label, o in self.others},
            "closed": name(self.closed),
            "text": self.text(),
        }


@dataclass(frozen=True)
class Advice:
    """The options for one job, working ones first, each group by cost then time.

    ``period``: what the options' money covers ("job" or "month"); ``assumptions``: the
    (name, value) pairs taken from ``lab_utils.assumptions``, to print beside the answer;
    ``given``: the values the caller gave; ``derived``: results on the way (memory, FLOPs,
    tokens per month); ``ranked_by``: "cost" (the order above) or "energy" (:meth:`ranked`).
    """

    job: str
    period: str
    options: tuple[Option, ...]
    assumptions: tuple[tuple[str, object], ...]
    given: tuple[tuple[str, object], ...] = ()
    derived: tuple[tuple[str, object], ...] = ()
    ranked_by: str = "cost"

    @classmethod
    def ranking(cls, job, period, options, **parts) -> Advice:
        """The Advice of ``options`` ranked by cost (working first, then dollars, then time)."""
        return cls(job, period, _first_not_waiting(sorted(options, key=_cost_key)), **parts)

    def ranked(self, by: str = "cost") -> Advice:
        """The same options ranked by "cost" (working ones first, then dollars, then time) or by
        "energy" (working ones first, then kWh, fewest first; options without an energy
        estimate, such as per-token prices, last). The verdict stays on dollars."""
        by = checks.choice("by", by, tuple(_RANK_KEYS))
        return dataclasses.replace(
            self, options=_first_not_waiting(sorted(self.options, key=_RANK_KEYS[by])), ranked_by=by
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
        """The cheapest working option of these kinds ("gpu", "serverless", "hosted", ...), one
        bound by its GPUs' exchanges only when no other works; None when none works."""
        return min(
            (o for o in self.options if o.kind in kinds and o.works and _cost(o) is not None),
            key=lambda o: (o.bound in _COMMUNICATION, *_cost_key(o)),
            default=None,
        )

    @property
    def verdict(self) -> Verdict:
        """The answer (:class:`Verdict`): the cheapest working option and, for serving, the
        cheapest of each other way (per token, serverless, always on) and a closed model's API."""
        best = self.best
        if best is None or self.period != "month":
            return Verdict(self.job, self.period, best)
        others = []
        for kinds, label in _SERVING_WAYS:
            other = self.cheapest(*kinds)
            if other is not None and other is not best:
                others.append((label, other))
            elif other is None and best.kind not in kinds and any(o.kind in kinds for o in self.options):
                others.append((label, None))
        closed = next((o for o in self.options if o.kind == "api" and _cost(o) is not None), None)
        return Verdict(self.job, self.period, best, tuple(others), closed)

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
            cost = _cost(o)
            shown = "-" if not o.fits else "no price" if cost is None else f"{cost:,.2f}"
            extra = [o.precision or "-", o.engine or "-"] if serving_job else []
            kg = getattr(o, f"emissions_per_{o.period}_kg")
            rows.append(
                (rank, o.name, o.n_devices, "yes" if o.fits else "no", time, shown, *extra)
                + (_number(_energy(o)), _number(kg), o.bound, o.price_date if o.fits else "-", o.why or "")
            )
        extra_headers = ("precision", "engine") if serving_job else ()
        headers = (
            *("#", "option", "n", "fits", "time", f"$ per {self.period}", *extra_headers),
            *(f"kWh per {self.period}", "kg CO2e", "bound", "price date", "why not"),
        )
        aligns = (
            "right",
            "left",
            "right",
            "left",
            "right",
            "right",
            *(("left", "left") if serving_job else ()),
        )
        note = "time: request latency" if serving_job else "time: wall clock of the job"
        return (
            tabulate(
                rows,
                headers=headers,
                tablefmt="simple",
                disable_numparse=True,
                colalign=(*aligns, "right", "right", "left", "left", "left"),
            )
            + f"\n({note}; kWh: the devices at their TDP, no building overhead (PUE)"
            + ("; per-token prices publish none" if serving_job else "")
            + "; estimates from vendor specs and list prices)"
            + (
                "\n(bound interconnect or network: the GPUs' exchanges, at their links' pace, outlast their"
                " compute; shown, never ranked first while another option works)"
                if any(o.bound in _COMMUNICATION for o in self.options)
                else ""
            )
            + "".join(
                f"\n({note})" for note in dict.fromkeys(n for o in self.options for n in o.engine_notes)
            )
            + "".join(
                f"\n(serverless starts, as serverless.cold_start: {starts})"
                for name, starts in self.derived
                if name == "serverless_starts"
            )
        )

    def to_dict(self) -> dict:
        """Plain data for JSON: the verdict's text (what the website shows) and its data."""
        return {
            "job": self.job,
            "period": self.period,
            "verdict": self.verdict.text(),
            "verdict_data": self.verdict.to_dict(),
            "ranked_by": self.ranked_by,
            "assumptions": dict(self.assumptions),
            "given": dict(self.given),
            "derived": dict(self.derived),
            "options": [dict(dataclasses.asdict(o), works=o.works) for o in self.options],
        }


def _number(value) -> str:
    """A table cell: thousands separators, at most 3 significant digits, never an exponent."""
    if value is None:
        return "-"
    digits = max(0, 2 - math.floor(math.log10(abs(value)))) if value else 0
    return f"{round(value, digits):,.{digits}f}"
