"""Prices: API tokens, machines by the hour, serverless GPUs by the second.

Every price lives in ``lab_utils/data/prices.toml`` with its date and source, loaded through
``lab_utils.catalogs``; this module hands them out as frozen records (US dollars). Which price
*stands for* a device in an answer is an assumption (``lab_utils.assumptions.device_price``).
Pure Python: no torch.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from lab_utils import catalogs, checks, hardware, lookup

__all__ = [
    "SECONDS_PER_HOUR",
    "ApiPrice",
    "HourlyPrice",
    "ServerlessPrice",
    "api_price",
    "api_prices",
    "hourly_price",
    "host_offer",
    "hourly_prices",
    "serverless_price",
    "serverless_prices",
    "usd_per_million_tokens",
]

SECONDS_PER_HOUR = 3600.0
"""The one conversion between prices per hour and rates per second."""


def usd_per_million_tokens(usd_per_hour, tokens_per_s) -> float:
    """Dollars per 1M tokens on a machine rented at ``usd_per_hour`` that produces
    ``tokens_per_s``: price / (tokens/s x 3600) x 1e6. $1.12/h at 191 tokens/s: $1.63."""
    usd_per_hour = checks.number("usd_per_hour", usd_per_hour, strict=False)
    tokens_per_s = checks.number("tokens_per_s", tokens_per_s)
    return usd_per_hour / (tokens_per_s * SECONDS_PER_HOUR) * 1e6


_DATA_FILE = "prices.toml"


@dataclass(frozen=True)
class ApiPrice:
    """A hosted model's price in dollars per 1M tokens read (input) and written (output).
    ``model``: the open model of ``lab_utils.llms`` a provider hosts (None: a closed model,
    a different product from any open one); ``verified`` False where the price could not be
    confirmed on the provider's own dated page."""

    name: str
    provider: str
    input_per_million: float
    output_per_million: float
    date: str
    source: str
    aliases: tuple[str, ...] = ()
    model: str | None = None
    verified: bool = True  # False: not confirmed on the provider's own dated page (the source says why)

    @property
    def date_label(self) -> str:
        """The date to print beside the price: '2026-12', or '2026-12, unverified'."""
        return self.date if self.verified else f"{self.date}, unverified"


@dataclass(frozen=True)
class HourlyPrice:
    """A machine rented by the hour. ``gpu``: its catalog name (None for a CPU machine or a GPU
    outside the catalog); ``price_cut_up_to``: a later cut of at most that fraction, on
    ``price_cut_date``."""

    name: str
    provider: str
    kind: str
    usd_per_hour: float
    date: str
    source: str
    n_gpus: int = 0
    gpu: str | None = None
    cpu_cores: int | None = None
    cpu_vcpus: int | None = None
    host_ram_gib: float | None = None  # the RAM beside the GPUs, as the provider states it (GiB)
    price_cut_up_to: float | None = None
    price_cut_date: str | None = None
    note: str | None = None

    @property
    def usd_per_gpu_hour(self) -> float:
        if not self.n_gpus:
            raise ValueError(f"{self.name} has no GPU")
        return self.usd_per_hour / self.n_gpus

    @property
    def host_ram_bytes(self) -> float | None:
        """The host's RAM in bytes (None where the data does not state it)."""
        return None if self.host_ram_gib is None else self.host_ram_gib * 2**30

    @property
    def lowest_usd_per_hour(self) -> float:
        """The price after the largest announced cut (the list price when there was none)."""
        return self.usd_per_hour * (1 - (self.price_cut_up_to or 0.0))


@dataclass(frozen=True)
class ServerlessPrice:
    """Per-second prices of one serverless GPU class: flex workers (billed while they run)
    and active workers (always on, discounted). ``gpus``: catalog names of its GPUs."""

    name: str
    label: str
    gpus: tuple[str, ...]
    flex_per_s: float
    active_per_s: float
    date: str
    source: str
    note: str | None = None

    @property
    def flex_per_hour(self) -> float:
        return self.flex_per_s * SECONDS_PER_HOUR

    @property
    def active_per_hour(self) -> float:
        return self.active_per_s * SECONDS_PER_HOUR


def _record(cls, table: dict, where: str):
    """``cls(**table)`` after checking the prices and the GPU names (name, source and date are
    checked by ``catalogs.parse``)."""
    for key in (
        "input_per_million",
        "output_per_million",
        "usd_per_hour",
        "flex_per_s",
        "active_per_s",
        "host_ram_gib",
    ):
        if key in table:
            checks.number(f"{where}: {key}", table[key], strict=False)
    if not isinstance(table.get("verified", True), bool):
        raise ValueError(f"{where}: verified must be true or false, got {table['verified']!r}")
    table = dict(table)
    for key in ("aliases", "gpus"):
        if key in table:
            table[key] = tuple(table[key])
    for gpu in (*table.get("gpus", ()), *([table["gpu"]] if table.get("gpu") else [])):
        if hardware.get(gpu).name != gpu:
            raise ValueError(
                f"{where}: GPU {gpu!r} must be spelt as the catalog's name {hardware.get(gpu).name!r}"
            )
    try:
        return cls(**table)
    except TypeError as error:
        raise ValueError(f"{where}: {error}") from error


_TABLES = {"api": ApiPrice, "hourly": HourlyPrice, "serverless": ServerlessPrice}


@functools.cache
def _prices() -> dict[str, tuple]:
    origin = f"lab_utils/data/{_DATA_FILE}"
    loaded = {}
    for key, cls in _TABLES.items():
        records = catalogs.load(_DATA_FILE, key, date_key="date")
        loaded[key] = tuple(
            _record(cls, table, f"{origin} [[{key}]] #{number}")
            for number, table in enumerate(records, start=1)
        )
    return loaded


def _find(kind: str, name: str, what: str):
    records = _prices()[kind]
    index = {
        lookup.key(spelling): record
        for record in records
        for spelling in (record.name, *getattr(record, "aliases", ()))
    }
    return lookup.find(name, index, what, [record.name for record in records])


def api_prices() -> tuple[ApiPrice, ...]:
    """Every API price in the data, in file order."""
    return _prices()["api"]


def api_price(name: str) -> ApiPrice:
    """One API's price by name or alias ('Claude Haiku 4.5', 'haiku', 'gpt-4o-mini')."""
    return _find("api", name, "API prices")


def hourly_prices() -> tuple[HourlyPrice, ...]:
    """Every hourly offer (pods, cloud instances, Colab), in file order."""
    return _prices()["hourly"]


def host_offer(gpu: str, host_bytes) -> HourlyPrice | None:
    """The cheapest offer of one ``gpu`` (its catalog name) whose host RAM holds ``host_bytes``
    (None when the data has none)."""
    host_bytes = checks.number("host_bytes", host_bytes, strict=False)
    fitting = [
        offer
        for offer in hourly_prices()
        if offer.gpu == gpu
        and offer.n_gpus == 1
        and (offer.host_ram_bytes or 0) >= host_bytes
        and offer.usd_per_hour > 0
    ]
    return min(fitting, key=lambda offer: offer.usd_per_hour, default=None)


def hourly_price(name: str) -> HourlyPrice:
    """One hourly offer by name ('Runpod H100 SXM pod', 'AWS p5.48xlarge')."""
    return _find("hourly", name, "hourly prices")


def serverless_prices() -> tuple[ServerlessPrice, ...]:
    """Every serverless GPU class's per-second prices, cheapest first."""
    return _prices()["serverless"]


def serverless_price(name: str) -> ServerlessPrice:
    """One serverless class by its name ('Runpod serverless H100') or by a GPU the catalog
    knows ('H100', 'RTX 4090'): the class that offers that GPU."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__} {name!r}")
    try:
        return _find("serverless", name, "serverless prices")
    except ValueError as not_a_class:
        try:
            gpu = hardware.get(name).name
        except ValueError:
            raise not_a_class from None
        for record in serverless_prices():
            if gpu in record.gpus:
                return record
        raise ValueError(
            f"name={name!r}: no serverless price lists the {gpu}; "
            f"classes: {', '.join(r.label for r in serverless_prices())}"
        ) from None
