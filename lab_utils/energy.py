"""Energy and emissions of a job from the devices' power: kWh = hours x devices x TDP x share,
kg CO2e = kWh x the grid's intensity. Both factors are assumptions (``power_share_of_tdp``,
``grid_kg_co2e_per_kwh`` in ``lab_utils/data/assumptions.toml``): estimates, not measurements.

>>> job_energy_kwh(10.0, 2, 700.0, power_share=1.0)
14.0
>>> emissions_kg(14.0, grid_kg_per_kwh=0.5)
7.0

Pure Python: no torch.
"""

from __future__ import annotations

from lab_utils import assumptions, checks

__all__ = ["emissions_kg", "job_energy_kwh"]


def job_energy_kwh(hours: float, n_devices: int, tdp_watts: float, *, power_share: float | None = None) -> float:
    """kWh that ``n_devices`` devices of ``tdp_watts`` draw in ``hours`` at ``power_share`` of
    their TDP (default: the ``power_share_of_tdp`` assumption)."""
    hours = checks.number("hours", hours, strict=False)
    n_devices = checks.count("n_devices", n_devices)
    tdp_watts = checks.number("tdp_watts", tdp_watts)
    share = assumptions.resolve(power_share_of_tdp=power_share)[0]["power_share_of_tdp"]
    share = checks.number("power_share", share, maximum=1.0)
    return hours * n_devices * tdp_watts * share / 1000.0


def emissions_kg(energy_kwh: float, *, grid_kg_per_kwh: float | None = None) -> float:
    """kg CO2e for ``energy_kwh`` at ``grid_kg_per_kwh`` (default: ``grid_kg_co2e_per_kwh``)."""
    energy_kwh = checks.number("energy_kwh", energy_kwh, strict=False)
    grid = assumptions.resolve(grid_kg_co2e_per_kwh=grid_kg_per_kwh)[0]["grid_kg_co2e_per_kwh"]
    return energy_kwh * checks.number("grid_kg_per_kwh", grid, strict=False)
