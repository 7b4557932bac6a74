"""The calculators' shared kernels, at the bottom of the calculator layer.

Each formula that more than one calculator needs has its one owner here; ``memory``,
``serving``, ``economics``, ``advisor`` and the rest import it and never write it again:

- :func:`peak_flops`: a device's dense peak in the dtype it computes in (or one given);
- :data:`BYTES_PER_VALUE`, :func:`bytes_per_value`, :func:`weight_bytes`: bytes of values stored
  in a precision;
- :func:`whole_servers`: a job beyond one server rents whole servers;
- :func:`always_on_devices` and :func:`always_on_per_month_usd`: how many devices an always-on
  service keeps, and their monthly bill;
- :func:`per_month_usd`: a one-off cost (a fine-tune) spread over months of serving;
- :func:`engine_efficiency`: the extra factor on an engine's times (None: 1).

Pure arithmetic: no torch, no clock, no screen. It imports only the data layer.

>>> peak_flops(hardware.get("T4"))
('fp16', 65000000000000.0)
>>> whole_servers(12, 8)
(2, 16)
>>> weight_bytes(8e9, "bf16") / 1e9
16.0
"""

from __future__ import annotations

import math

from lab_utils import assumptions, checks, hardware

__all__ = [
    "BYTES_PER_VALUE",
    "HOURS_PER_MONTH",
    "always_on_devices",
    "always_on_per_month_usd",
    "bytes_per_value",
    "engine_efficiency",
    "peak_flops",
    "per_month_usd",
    "weight_bytes",
    "whole_servers",
]

HOURS_PER_MONTH = 730.0
"""Hours in an average month: 365 x 24 / 12, the month cloud providers bill."""

BYTES_PER_VALUE = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5}
"""Bytes per stored value. 4-bit formats (NF4, GPTQ, AWQ) also store a scale per block of
weights, a few percent more (QLoRA, arXiv 2305.14314: NF4 ~0.5 byte per parameter)."""


def bytes_per_value(precision: str) -> float:
    """Bytes one value takes in ``precision`` (a key of :data:`BYTES_PER_VALUE`)."""
    return BYTES_PER_VALUE[checks.choice("precision", precision, BYTES_PER_VALUE)]


def weight_bytes(n_params, precision: str = "bf16") -> float:
    """Bytes to hold ``n_params`` weights (or any values) in ``precision``."""
    n_params = checks.number("n_params", n_params)
    return float(n_params * bytes_per_value(precision))


def peak_flops(spec: hardware.Spec, dtype: str | None = None) -> tuple[str, float]:
    """(dtype, dense peak FLOP/s) of ``spec`` (vendor specification): in ``dtype`` when given,
    else in the dtype it computes in (the ``compute_dtypes`` assumption: bf16, else fp16, else
    fp32). ValueError, naming the peaks it has, when the catalog has no such peak."""
    spec = hardware.as_spec(spec)
    if dtype is None:
        dtype = assumptions.compute_dtype(spec)
    if dtype not in spec.peak_flops:
        raise ValueError(f"dtype={dtype!r}: {spec.name} has peaks for {tuple(spec.peak_flops)}")
    return dtype, spec.peak_flops[dtype]


def whole_servers(n_devices, per_server) -> tuple[int, int]:
    """(servers, devices rented) for a job that needs ``n_devices``: within one server of
    ``per_server`` devices, the devices it needs; beyond it, whole servers (a cluster rents
    nodes, not single GPUs), so 12 GPUs of 8 per server rent 2 servers, 16 GPUs."""
    n_devices = checks.count("n_devices", n_devices)
    per_server = checks.count("max_devices", per_server)
    servers = math.ceil(n_devices / per_server)
    return servers, n_devices if servers == 1 else servers * per_server


def always_on_devices(load, capacity_per_device, utilisation=None) -> int:
    """Devices (or replicas) an always-on service keeps for an average ``load``, each serving
    at most ``capacity_per_device`` in the same unit (requests/s, tokens per month, ...).

    The one rule: enough that the average load uses at most ``utilisation`` of their capacity
    (None: the ``serve_utilisation`` assumption, one half), since random arrivals come in bursts
    and a server run at full capacity queues them; and at least one, since an always-on
    service keeps a device even when no request comes."""
    load = checks.number("load", load, strict=False)
    capacity = checks.number("capacity_per_device", capacity_per_device)
    share = assumptions.resolve(serve_utilisation=utilisation)[0]["serve_utilisation"]
    share = checks.number("utilisation", share, maximum=1.0)
    return max(1, math.ceil(load / (capacity * share)))


def always_on_per_month_usd(n_devices, usd_per_hour) -> float:
    """Dollars a month for ``n_devices`` billed every hour of it (:data:`HOURS_PER_MONTH`), busy or
    idle, at ``usd_per_hour`` each."""
    n_devices = checks.count("n_devices", n_devices)
    usd_per_hour = checks.number("usd_per_hour", usd_per_hour, strict=False)
    return n_devices * HOURS_PER_MONTH * usd_per_hour


def per_month_usd(cost_usd, months=None) -> float:
    """A one-off ``cost_usd`` (a fine-tune) spread evenly over ``months`` of serving (None: the
    ``amortize_months`` assumption), as a self-hosted monthly bill counts it."""
    cost_usd = checks.number("cost_usd", cost_usd, strict=False)
    months = assumptions.resolve(amortize_months=months)[0]["amortize_months"]
    return cost_usd / checks.number("amortize_months", months)


def engine_efficiency(efficiency=None) -> float:
    """The extra factor (0 < e <= 1) on a serving engine's times; None: 1, the engine's profile
    alone (its published measurement is the estimate, so no assumption is added)."""
    return 1.0 if efficiency is None else checks.number("efficiency", efficiency, maximum=1.0)
