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


@pytest.mark.parametrize(
    "call, parameter",
    [
        (lambda: energy.job_energy_kwh(-1.0, 1, 700.0), "hours"),
        (lambda: energy.job_energy_kwh(1.0, 0, 700.0), "n_devices"),
        (lambda: energy.job_energy_kwh(1.0, 1, 0.0), "tdp_watts"),
        (lambda: energy.job_energy_kwh(1.0, 1, 700.0, power_share=1.5), "power_share"),
        (lambda: energy.emissions_kg(1.0, grid_kg_per_kwh=-0.1), "grid_kg_per_kwh"),
    ],
)
def test_bad_input_names_the_parameter(call, parameter):
    with pytest.raises(ValueError, match=parameter):
        call()


def test_every_priced_job_option_carries_its_energy():
    advice = advisor.fine_tune("llama-3.1-8b", 1e8, method="lora")
    worked = [o for o in advice.options if o.works]
    assert worked
    for option in worked:
        spec = hardware.get(option.device)
        expected_kwh = (
            option.hours * option.n_devices * spec.tdp_watts * assumptions.value("power_share_of_tdp") / 1e3
        )
        assert option.energy_per_job_kwh == pytest.approx(expected_kwh)
        assert option.emissions_per_job_kg == pytest.approx(
            expected_kwh * assumptions.value("grid_kg_co2e_per_kwh")
        )
    assert dict(advice.assumptions)["grid_kg_co2e_per_kwh"] == assumptions.value("grid_kg_co2e_per_kwh")
    assert "kg CO2e" in advice.table()


def test_hand_worked_power_per_flop_and_per_token():
    # an H100 SXM (700 W TDP) at half its TDP: 350 W; two of them: 700 W
    assert energy.device_watts("H100 SXM", power_share=0.5) == pytest.approx(350.0)
    assert energy.device_watts("H100 SXM", n_devices=2, power_share=0.5) == pytest.approx(700.0)
    # 700 W computing 0.4 x 989e12 FLOP/s: 700 / 3.956e14 = 1.769e-12 J per FLOP
    assert energy.joules_per_flop(700.0, 0.4 * 989e12) == pytest.approx(1.7695e-12, rel=1e-4)
    # 700 W serving 5,600 tokens/s: 0.125 J per token, 8 tokens per joule
    assert energy.joules_per_token(700.0, 5600.0) == pytest.approx(0.125)
    assert energy.tokens_per_joule(700.0, 5600.0) == pytest.approx(8.0)


def test_facility_and_regions_worked_by_hand():
    assert energy.facility_kwh(10.0, pue=1.5) == pytest.approx(15.0)
    assert energy.facility_kwh(10.0) == pytest.approx(10.0 * assumptions.value("pue"))
    assert 1.0 <= assumptions.value("pue") < 2.5
    # 100 kWh on France's grid (0.056 kg/kWh) and India's (0.713): 5.6 and 71.3 kg CO2e
    assert energy.emissions_kg(100.0, region="France") == pytest.approx(5.6)
    assert energy.emissions_kg(100.0, region="india") == pytest.approx(71.3)
    regions = energy.grid_regions()
    assert {"france", "germany", "us", "india"} <= set(regions)
    for region in regions:
        entry = assumptions.get(f"grid_kg_co2e_per_kwh_region.{region}")
        assert entry.source and "20" in entry.source and 0.0 < entry.value < 1.5
    assert energy.region_kg_co2e_per_kwh() == assumptions.value("grid_kg_co2e_per_kwh")


@pytest.mark.parametrize(
    "call, parameter",
    [
        (lambda: energy.emissions_kg(1.0, region="atlantis"), "region"),
        (lambda: energy.emissions_kg(1.0, region="france", grid_kg_per_kwh=0.1), "region"),
        (lambda: energy.facility_kwh(1.0, pue=0.9), "pue"),
        (lambda: energy.joules_per_token(700.0, 0.0), "tokens_per_s"),
        (lambda: energy.joules_per_flop(-1.0, 1e12), "watts"),
        (lambda: energy.device_watts("H100 SXM", n_devices=0), "n_devices"),
    ],
)
def test_bad_energy_input_names_the_parameter(call, parameter):
    with pytest.raises(ValueError, match=parameter):
        call()


def test_fine_tune_joules_per_token_is_power_times_flops_per_token_over_speed():
    from lab_utils import economics, llms

    fine = economics.fine_tune_estimate("llama-3.1-8b", 1e8, method="lora")
    watts = 700.0 * assumptions.value("power_share_of_tdp")
    flops_per_token = 4 * llms.get("llama-3.1-8b").params_per_token + fine.attention_flops / 1e8  # LoRA: 4 N
    assert fine.attention_flops > 0  # ... plus the attention term, per token
    expected = watts * flops_per_token / (989e12 * fine.mfu)  # the GPU count cancels
    assert fine.joules_per_token == pytest.approx(expected)
    assert fine.energy_kwh == pytest.approx(fine.hours * fine.n_gpus * watts / 1e3)


def test_serving_tokens_per_joule_is_power_over_throughput():
    from lab_utils import serving

    e = serving.estimate("llama-3.1-8b", device="H100 SXM", prompt_len=500, output_len=200, batch=8)
    assert e.watts == pytest.approx(700.0 * assumptions.value("power_share_of_tdp"))
    assert e.joules_per_output_token == pytest.approx(e.watts / e.output_tokens_per_s)
    assert e.output_tokens_per_joule == pytest.approx(e.output_tokens_per_s / e.watts)
    assert serving.replica("H100 SXM", 2).tdp_watts == 1400


def test_rank_by_energy_orders_working_options_by_kwh_and_keeps_the_cheapest_verdict():
    advice = advisor.serve("llama-3.1-8b", 1000)
    by_energy = advice.ranked("energy")
    assert by_energy.ranked_by == "energy" and sorted(by_energy.options, key=id) == sorted(
        advice.options, key=id
    )
    working = [o for o in by_energy.options if o.works]
    priced = [o.energy_per_month_kwh for o in working if o.energy_per_month_kwh is not None]
    assert priced == sorted(priced) and priced
    assert working[: len(priced)] == [
        o for o in working if o.energy_per_month_kwh is not None
    ]  # APIs (no kWh) last
    assert all(o.energy_per_month_kwh is None for o in by_energy.options if o.kind == "api")
    assert (
        by_energy.best == advice.best and by_energy.verdict == advice.verdict
    )  # the verdict stays on dollars
    pod = next(o for o in advice.options if o.name == "H100 SXM always on")
    assert pod.energy_per_month_kwh == pytest.approx(
        730.0 * 700.0 * assumptions.value("power_share_of_tdp") / 1e3
    )
    with pytest.raises(ValueError, match="by"):
        advice.ranked("watts")


def test_pick_rank_by_energy_on_the_command_line(capsys):
    import json

    from lab_utils import cli

    assert (
        cli.main(
            [
                "pick",
                "fine-tune",
                "--model",
                "llama-3.1-8b",
                "--tokens",
                "1e8",
                "--rank-by",
                "energy",
                "--json",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["ranked_by"] == "energy"
    kwh = [o["energy_per_job_kwh"] for o in data["options"] if o["works"]]
    assert kwh == sorted(kwh) and all("emissions_per_job_kg" in o for o in data["options"])
    assert (
        cli.main(["pick", "fine-tune", "--model", "llama-3.1-8b", "--tokens", "1e8", "--rank-by", "energy"])
        == 0
    )
    assert "kWh per job" in capsys.readouterr().out
