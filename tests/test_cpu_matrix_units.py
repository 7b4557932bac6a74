"""CPUs as they are (issue 25, item 6): the catalog's CPUs carry their matrix units, and a
per-core rate the vendor publishes becomes that dtype's peak, computed, never typed in."""

import pytest

from lab_utils import assumptions, hardware, roofline


def test_sapphire_rapids_amx_peaks_are_computed_from_the_per_core_rates():
    xeon = hardware.get("Intel Xeon Platinum 8480+")
    assert "AMX-BF16" in xeon.matrix_units and "AMX-INT8" in xeon.matrix_units
    assert xeon.peak_flops["bf16"] == 56 * 2.0e9 * 1024  # cores x base clock x AMX-BF16 FLOP per cycle
    assert xeon.peak_flops["int8"] == 56 * 2.0e9 * 2048
    assert xeon.peak_flops["bf16"] == 16 * xeon.peak_flops["fp32"]
    assert list(xeon.peak_flops) == ["fp32", "bf16", "int8"]  # the catalog's dtype order


def test_a_cpu_with_a_matrix_unit_computes_in_bf16_like_a_gpu():
    xeon = hardware.get("8480+")
    assert assumptions.compute_dtype(xeon) == "bf16"
    assert roofline.roof_of(xeon).dtype == "bf16"


def test_a_part_without_a_published_rate_names_its_units_but_keeps_fp32():
    epyc = hardware.get("AMD EPYC 9684X")
    assert "AVX-512 BF16" in epyc.matrix_units
    assert set(epyc.peak_flops) == {"fp32"}


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"bf16_flops_per_cycle_per_core": 1024, "peak_flops": {"bf16": 1e12}}, "computed from"),
        ({"int8_ops_per_cycle_per_core": 0}, "positive integer"),
    ],
)
def test_a_matrix_rate_is_checked(extra, message):
    text = """[[device]]
name = "Test CPU"
kind = "cpu"
cores = 4
clock_hz = 2e9
fp32_flops_per_cycle_per_core = 32
source = "test"
source_date = "2024-01"
"""
    table = "\n".join(f"{k} = {v!r}" for k, v in extra.items() if k != "peak_flops")
    if "peak_flops" in extra:
        table += "\n[device.peak_flops]\n" + "\n".join(f"{k} = {v!r}" for k, v in extra["peak_flops"].items())
    with pytest.raises(ValueError, match=message):
        hardware._parse_catalog(text + table + "\n")


def test_a_gpu_cannot_carry_a_cpu_rate():
    text = """[[device]]
name = "Test GPU"
kind = "gpu"
bf16_flops_per_cycle_per_core = 1024
source = "test"
source_date = "2024-01"
"""
    with pytest.raises(ValueError, match="do not apply to a gpu"):
        hardware._parse_catalog(text)


def test_the_advisor_prices_a_cpu_with_amx_at_its_matrix_peak():
    from lab_utils import advisor, economics, llms

    xeon = hardware.get("Intel Xeon Platinum 8480+")
    row = next(
        o for o in advisor.fine_tune("llama-3.1-8b", 1e7, method="lora").options if o.name == xeon.name
    )
    flops = economics.training_flops(
        llms.get("llama-3.1-8b").n_params,
        1e7,
        "lora",
        model="llama-3.1-8b",
        seq_len=assumptions.value("seq_len"),
    )  # with the attention term
    expected_h = flops / (xeon.peak_flops["bf16"] * assumptions.value("cpu_mfu")) / 3600
    assert row.hours == pytest.approx(expected_h)
