"""Energy and emissions from the devices' power: joules = watts x seconds, kWh = hours x devices
x TDP x share, kg CO2e = kWh x PUE x the grid's intensity. Every factor is an assumption
(``power_share_of_tdp``, ``pue``, ``grid_kg_co2e_per_kwh`` and its regions in
``lab_utils/data/assumptions.toml``): estimates, not measurements. A measured figure comes from
``lab_utils.energy_measure`` (a counter on the learner's machine) or from :func:`published`.

>>> job_energy_kwh(10.0, 2, 700.0, power_share=1.0)
14.0
>>> emissions_kg(14.0, grid_kg_per_kwh=0.5)
7.0
>>> round(joules_per_token(700.0, 5600.0), 3)  # 700 W serving 5,600 tokens/s
0.125
>>> joules_per_flop(700.0, 0.4 * 989e12) < 2e-12  # an H100 at 40% of its bf16 peak
True

Pure Python: no torch.
"""

from __future__ import annotations

from lab_utils import assumptions, checks, hardware

__all__ = [
    "JOULES_PER_KWH",
    "device_watts",
    "emissions_kg",
    "facility_kwh",
    "grid_regions",
    "job_energy_kwh",
    "joules_per_flop",
    "joules_per_token",
    "region_kg_co2e_per_kwh",
    "tokens_per_joule",
]

JOULES_PER_KWH = 3.6e6
"""1 kWh = 1,000 W x 3,600 s."""

_REGION_PREFIX = "grid_kg_co2e_per_kwh_region."


def _share(power_share) -> float:
    share = assumptions.resolve(power_share_of_tdp=power_share)[0]["power_share_of_tdp"]
    return checks.number("power_share", share, maximum=1.0)


def device_watts(device, *, n_devices: int = 1, power_share: float | None = None) -> float:
    """Watts that ``n_devices`` of ``device`` (a catalog name or ``hardware.Spec``) draw while
    busy: TDP x ``power_share`` (default: the ``power_share_of_tdp`` assumption). ValueError
    when the catalog has no TDP for the device."""
    spec = hardware.as_spec(device)
    if not spec.tdp_watts:
        raise ValueError(f"device={spec.name!r} has no TDP in the hardware catalog: no power estimate")
    return checks.count("n_devices", n_devices) * spec.tdp_watts * _share(power_share)


def joules_per_flop(watts: float, flops_per_s: float) -> float:
    """Joules per floating-point operation of a device drawing ``watts`` while it computes
    ``flops_per_s`` (its peak x the utilisation it reaches)."""
    return checks.number("watts", watts) / checks.number("flops_per_s", flops_per_s)


def joules_per_token(watts: float, tokens_per_s: float) -> float:
    """Joules per token of a device drawing ``watts`` while it handles ``tokens_per_s``
    (training or generated tokens): power / throughput."""
    return checks.number("watts", watts) / checks.number("tokens_per_s", tokens_per_s)


def tokens_per_joule(watts: float, tokens_per_s: float) -> float:
    """Tokens per joule: the inverse of :func:`joules_per_token`."""
    return 1.0 / joules_per_token(watts, tokens_per_s)


def job_energy_kwh(
    hours: float, n_devices: int, tdp_watts: float, *, power_share: float | None = None
) -> float:
    """kWh that ``n_devices`` devices of ``tdp_watts`` draw in ``hours`` at ``power_share`` of
    their TDP (default: the ``power_share_of_tdp`` assumption). The devices alone: multiply by
    :func:`facility_kwh`'s PUE for the building's share."""
    hours = checks.number("hours", hours, strict=False)
    n_devices = checks.count("n_devices", n_devices)
    tdp_watts = checks.number("tdp_watts", tdp_watts)
    return hours * n_devices * tdp_watts * _share(power_share) / 1000.0


def facility_kwh(device_kwh: float, *, pue: float | None = None) -> float:
    """kWh the data centre draws for ``device_kwh`` at the devices: x ``pue`` (power usage
    effectiveness, default the ``pue`` assumption; 1.0 counts the devices alone)."""
    device_kwh = checks.number("device_kwh", device_kwh, strict=False)
    pue = assumptions.resolve(pue=pue)[0]["pue"]
    return device_kwh * checks.number("pue", pue, minimum=1.0, strict=False)


def grid_regions() -> tuple[str, ...]:
    """The regions whose grid intensity the assumptions hold (``region=`` of :func:`emissions_kg`)."""
    return tuple(
        a.name.removeprefix(_REGION_PREFIX)
        for a in assumptions.catalog()
        if a.name.startswith(_REGION_PREFIX)
    )


def region_kg_co2e_per_kwh(region: str | None = None) -> float:
    """kg CO2e per kWh of ``region``'s grid (one of :func:`grid_regions`); None: the world average
    (``grid_kg_co2e_per_kwh``)."""
    if region is None:
        return assumptions.value("grid_kg_co2e_per_kwh")
    region = checks.choice("region", region.lower() if isinstance(region, str) else region, grid_regions())
    return assumptions.value(_REGION_PREFIX + region)


def emissions_kg(
    energy_kwh: float, *, grid_kg_per_kwh: float | None = None, region: str | None = None
) -> float:
    """kg CO2e for ``energy_kwh`` at ``grid_kg_per_kwh`` (kg CO2e per kWh), else ``region``'s grid
    (:func:`grid_regions`), else the world average (``grid_kg_co2e_per_kwh``)."""
    energy_kwh = checks.number("energy_kwh", energy_kwh, strict=False)
    if grid_kg_per_kwh is not None and region is not None:
        raise ValueError("grid_kg_per_kwh and region: give one (a figure or a region), not both")
    grid = region_kg_co2e_per_kwh(region) if grid_kg_per_kwh is None else grid_kg_per_kwh
    return energy_kwh * checks.number("grid_kg_per_kwh", grid, strict=False)
