"""Energy and emissions per job: hand-worked cases, the assumptions they read, and the advisor's fields."""

import pytest

from lab_utils import advisor, assumptions, energy, hardware


def test_hand_worked_energy_and_emissions():
    # 8 GPUs of 700 W for 2.5 h at their TDP: 8 x 0.7 kW x 2.5 h = 14 kWh; at 0.4 kg/kWh: 5.6 kg
    assert energy.job_energy_kwh(2.5, 8, 700.0, power_share=1.0) == pytest.approx(14.0)
    assert energy.emissions_kg(14.0, grid_kg_per_kwh=0.4) == pytest.approx(5.6)
    assert energy.job_energy_kwh(2.5, 8, 700.0, power_share=0.5) == pytest.approx(7.0)
    assert energy.job_energy_kwh(0.0, 1, 300.0) == 0.0


def test_defaults_are_the_stated_assumptions():
    grid = assumptions.get("grid_kg_co2e_per_kwh")
    assert grid.source and 0.0 < grid.value < 1.5  # kg CO2e per kWh: every real grid lies below 1.5
    share = assumptions.value("power_share_of_tdp")
    assert energy.job_energy_kwh(1.0, 1, 1000.0) == pytest.approx(share)
    assert energy.emissions_kg(1.0) == pytest.approx(grid.value)


@pytest.mark.parametrize("call, parameter", [
    (lambda: energy.job_energy_kwh(-1.0, 1, 700.0), "hours"),
    (lambda: energy.job_energy_kwh(1.0, 0, 700.0), "n_devices"),
    (lambda: energy.job_energy_kwh(1.0, 1, 0.0), "tdp_watts"),
    (lambda: energy.job_energy_kwh(1.0, 1, 700.0, power_share=1.5), "power_share"),
    (lambda: energy.emissions_kg(1.0, grid_kg_per_kwh=-0.1), "grid_kg_per_kwh"),
])
def test_bad_input_names_the_parameter(call, parameter):
    with pytest.raises(ValueError, match=parameter):
        call()


def test_every_priced_job_option_carries_its_energy():
    advice = advisor.fine_tune("llama-3.1-8b", 1e8, method="lora")
    worked = [o for o in advice.options if o.works]
    assert worked
    for option in worked:
        spec = hardware.get(option.name.split(" x ")[-1])
        expected_kwh = option.hours * option.n_devices * spec.tdp_watts * assumptions.value("power_share_of_tdp") / 1e3
        assert option.energy_kwh == pytest.approx(expected_kwh)
        assert option.emissions_kg == pytest.approx(expected_kwh * assumptions.value("grid_kg_co2e_per_kwh"))
    assert dict(advice.assumptions)["grid_kg_co2e_per_kwh"] == assumptions.value("grid_kg_co2e_per_kwh")
    assert "kg CO2e" in advice.table()
