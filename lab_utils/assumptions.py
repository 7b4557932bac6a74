"""Every default an answer depends on, in one place: ``lab_utils/data/assumptions.toml``.

The calculators (``memory``, ``economics``, ``advisor``), the command line and the widgets read
their defaults here and keep no copy, so one job gets one answer wherever it is asked. Each
:class:`Assumption` carries its value, one line of why, and a source where one exists; every
answer can list the assumptions it used (:func:`lines`).

>>> precision_for("qlora")
'int4'
>>> value("mfu")
0.4
>>> compute_dtype(hardware.get("T4"))
'fp16'

Three rules are functions rather than values: :func:`precision_for` (a method's precision),
:func:`compute_dtype` (the dtype a device computes in) and :func:`device_price` (which price
stands for a device). Pure Python: no torch.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from lab_utils import catalogs, checks, hardware, prices, units

__all__ = [
    "FINE_TUNE_METHODS",
    "METHODS",
    "Assumption",
    "DevicePrice",
    "catalog",
    "compute_dtype",
    "device_price",
    "get",
    "lines",
    "precision_for",
    "resolve",
    "server_shapes",
    "value",
]

METHODS = ("inference", "full", "lora", "qlora")
"""Jobs whose precision is an assumption: serving, full fine-tune, LoRA, QLoRA (the one list)."""

FINE_TUNE_METHODS = METHODS[1:]
"""The fine-tuning methods: full, LoRA, QLoRA."""

_DATA_FILE = "assumptions.toml"
_DATE = re.compile(r"(19|20)\d\d-(0[1-9]|1[0-2])")


@dataclass(frozen=True)
class Assumption:
    """One default: ``name`` (e.g. "mfu", "precision.lora"), its ``value``, ``why`` in one
    line, ``source`` (a citation, or "course choice"), ``source_date`` (YYYY-MM of the source;
    for an undated page, a choice or a measurement here, the month it was read, made or
    measured), ``checked`` (YYYY-MM when the course last compared the value with its source, not
    before ``source_date``) and ``option``: the command-line option that overrides it (None
    where none does; several spellings separated by " | ")."""

    name: str
    value: object
    why: str
    source: str
    source_date: str
    checked: str
    option: str | None = None

    def line(self, taken: object = None) -> str:
        """'name = value: why', with ``taken`` as the value where a rule chose it (a dtype, an offer)."""
        shown = self.value if taken is None else taken
        shown = ", ".join(map(str, shown)) if isinstance(shown, list) else shown
        if self.name.endswith("_bytes") and isinstance(shown, (int, float)):
            shown = units.format_bytes(shown)
        elif self.name.endswith("_bytes_per_s") and isinstance(shown, (int, float)):
            shown = units.format_rate(shown, "B/s")
        return f"{self.name} = {shown}: {self.why}"


def _entries(table: dict, prefix: str = "") -> list[Assumption]:
    """Flatten the TOML: a table with a ``value`` is an entry; other tables nest names."""
    found = []
    for key, entry in table.items():
        name = f"{prefix}{key}"
        where = f"lab_utils/data/{_DATA_FILE}: [{name}]"
        if not isinstance(entry, dict):
            raise ValueError(f"{where} must be a table with value and why")
        if "value" not in entry:
            found += _entries(entry, f"{name}.")
            continue
        required = ("why", "source", "source_date", "checked")
        unknown = set(entry) - {"value", *required, "option"}
        if unknown or any(not isinstance(entry.get(key), str) or not entry[key].strip() for key in required):
            raise ValueError(
                f"{where}: needs value and a non-empty why, source, source_date and checked "
                f"(option optional), got keys {sorted(entry)}"
            )
        for key in ("source_date", "checked"):
            if not _DATE.fullmatch(entry[key]):
                raise ValueError(f"{where}: {key} must be YYYY-MM, got {entry[key]!r}")
        if entry["checked"] < entry["source_date"]:
            raise ValueError(
                f"{where}: checked {entry['checked']} is before source_date {entry['source_date']}"
            )
        found.append(
            Assumption(
                name,
                entry["value"],
                entry["why"],
                entry["source"],
                entry["source_date"],
                entry["checked"],
                entry.get("option"),
            )
        )
    return found


@functools.cache
def _load() -> dict[str, Assumption]:
    return {a.name: a for a in _entries(catalogs.read(_DATA_FILE))}


def catalog() -> tuple[Assumption, ...]:
    """Every assumption, in file order."""
    return tuple(_load().values())


def get(name: str) -> Assumption:
    """One assumption by its exact name, e.g. ``get("mfu")`` or ``get("precision.lora")``."""
    known = _load()
    if name not in known:
        raise ValueError(f"name={name!r} is not an assumption; known: {', '.join(known)}")
    return known[name]


def value(name: str):
    """The value of one assumption (``get(name).value``)."""
    return get(name).value


def resolve(**given) -> tuple[dict, dict]:
    """(values, taken): every keyword is an assumption's name (a dot written as ``__``); one
    given as None takes the assumption's value and is listed in ``taken``, the others keep the
    value given (checking it is the caller's job). The one way "None means the assumption;
    record it" is written.

    >>> resolve(mfu=None, seq_len=2048)
    ({'mfu': 0.4, 'seq_len': 2048}, {'mfu': 0.4})
    """
    values, taken = {}, {}
    for key, given_value in given.items():
        name = key.replace("__", ".")
        if given_value is None:
            given_value = taken[name] = value(name)
        values[name] = given_value
    return values, taken


def lines(taken) -> list[str]:
    """One short line per assumption an answer took: ``taken`` holds (name, value) pairs (or a
    dict), the value being what the answer used ('name = value: why')."""
    return [get(name).line(value) for name, value in dict(taken).items()]


# --- the three rules --------------------------------------------------------------------------


def precision_for(method: str) -> str:
    """The precision a job of ``method`` ("inference", "full", "lora", "qlora") runs in."""
    return value(f"precision.{checks.choice('method', method, METHODS)}")


def compute_dtype(spec: hardware.Spec) -> str:
    """The dtype ``spec`` computes in: the first of :data:`assumptions.toml` ``compute_dtypes``
    (bf16, fp16, fp32) it has a peak for. ValueError when it has none of them."""
    if not isinstance(spec, hardware.Spec):
        raise TypeError(f"spec must be a hardware.Spec, got {type(spec).__name__}")
    for dtype in value("compute_dtypes"):
        if dtype in spec.peak_flops:
            return dtype
    raise ValueError(f"spec={spec.name!r} has no peak in any of {value('compute_dtypes')}")


@dataclass(frozen=True)
class DevicePrice:
    """The price that stands for one device: ``usd_per_hour`` per device (None when the data has
    none), the offer it comes from, its source and date."""

    usd_per_hour: float | None
    offer: str
    source: str
    date: str


def _rentable_offers(spec: hardware.Spec) -> list:
    """The hourly offers of ``spec`` that can be rented: a price above zero, not a notebook tier."""
    excluded = value("price_excluded_kinds")
    return [
        p
        for p in prices.hourly_prices()
        if p.gpu == spec.name and p.n_gpus and p.usd_per_hour > 0 and p.kind not in excluded
    ]


def server_shapes(spec: hardware.Spec, max_devices: int | None = None) -> tuple[int, ...]:
    """The GPU counts a server of ``spec`` is rented with, fewest first: the ``server_gpu_counts``
    assumption (1, 2, 4 or 8) and every count the price data offers the GPU in, at most
    ``max_devices`` per server (None: the ``max_devices`` assumption; always allowed itself)."""
    if not isinstance(spec, hardware.Spec):
        raise TypeError(f"spec must be a hardware.Spec, got {type(spec).__name__}")
    per_node = checks.count("max_devices", value("max_devices") if max_devices is None else max_devices)
    offered = {p.n_gpus for p in _rentable_offers(spec)}
    counts = set(value("server_gpu_counts")) | offered
    return tuple(sorted({n for n in counts if n <= per_node} | {per_node}))


def _gpu_price(spec: hardware.Spec, n_gpus: int, per_node: int) -> DevicePrice:
    nodes = [p for p in _rentable_offers(spec) if p.n_gpus == per_node]
    if n_gpus > per_node and nodes:  # beyond one server: whole servers
        node = min(nodes, key=lambda p: p.usd_per_gpu_hour)
        return DevicePrice(node.usd_per_gpu_hour, f"{node.name}, per GPU", node.source, node.date)
    offers = _rentable_offers(spec)
    if offers:
        offer = min(offers, key=lambda p: p.usd_per_gpu_hour)
        label = offer.name
        if n_gpus > per_node:  # whole servers wanted, none of that size in the data
            label += f", per GPU (no offer of one {per_node}-GPU server in the data)"
        return DevicePrice(offer.usd_per_gpu_hour, label, offer.source, offer.date)
    for price in prices.serverless_prices():
        if spec.name in price.gpus and price.active_per_s > 0:
            return DevicePrice(
                price.active_per_hour,
                f"{price.name} active rate x 3600 (no hourly offer in the data)",
                price.source,
                price.date,
            )
    return DevicePrice(None, "no price in lab_utils/data/prices.toml", "-", "-")


def _cpu_price(spec: hardware.Spec, cpu_offer: str) -> DevicePrice:
    offer = prices.hourly_price(cpu_offer)
    if offer.n_gpus or not offer.cpu_cores:
        raise ValueError(
            f"cpu_offer={cpu_offer!r}: pick a CPU-only offer with a core count, e.g. {value('cpu_offer')!r}"
        )
    if not spec.cores:
        return DevicePrice(None, "no core count in the catalog to scale a price", "-", "-")
    return DevicePrice(
        offer.usd_per_hour / offer.cpu_cores * spec.cores,
        f"{offer.name} per-core price x {spec.cores} cores (assumption: a different CPU)",
        offer.source,
        offer.date,
    )


def device_price(
    spec: hardware.Spec, *, cpu_offer: str | None = None, n_gpus: int = 1, max_devices: int | None = None
) -> DevicePrice:
    """Which price stands for ``spec`` (rule: ``price_rule``), per device-hour. A GPU: its
    cheapest rentable hourly offer per GPU (never a notebook tier or a zero price), else its
    serverless class's active rate x 3600; a job on more than one server (``n_gpus`` above
    ``max_devices`` GPUs per server, None: the ``max_devices`` assumption) rents whole servers,
    at the cheapest offer of exactly one such server per GPU when the data has one (else the
    cheapest offer per GPU). A CPU: ``cpu_offer`` (default the ``cpu_offer`` assumption) scaled
    per core."""
    if not isinstance(spec, hardware.Spec):
        raise TypeError(f"spec must be a hardware.Spec, got {type(spec).__name__}")
    n_gpus = checks.count("n_gpus", n_gpus)
    per_node = checks.count("max_devices", value("max_devices") if max_devices is None else max_devices)
    if spec.kind == "cpu":
        return _cpu_price(spec, value("cpu_offer") if cpu_offer is None else cpu_offer)
    return _gpu_price(spec, n_gpus, per_node)
