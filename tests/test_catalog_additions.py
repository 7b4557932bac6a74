"""Issue 18's catalog additions: L2 sizes, the NVL and PCIe parts under the names torch
reports, and Apple's M1 chips."""

import pytest

from lab_utils import hardware


@pytest.mark.parametrize(
    "torch_name, catalog_name",
    [
        ("NVIDIA H200", "H200 SXM"),
        ("NVIDIA H200 NVL", "H200 NVL"),
        ("NVIDIA H100 NVL", "H100 NVL"),
        ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe"),
        ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM"),
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("Tesla T4", "T4"),
    ],
)
def test_names_torch_reports_find_their_own_entry(torch_name, catalog_name):
    assert hardware.get(torch_name).name == catalog_name


def test_nvl_and_pcie_parts_differ_from_their_sxm_siblings():
    h100, h100_nvl, h200, h200_nvl = (
        hardware.get(n) for n in ("H100 SXM", "H100 NVL", "H200 SXM", "H200 NVL")
    )
    # lower clocks: NVIDIA's FP32 peak is 60 TFLOP/s on the NVL cards, 67 on SXM
    assert h100_nvl.peak_flops["fp32"] < h100.peak_flops["fp32"]
    assert h100_nvl.peak_flops["bf16"] < h100.peak_flops["bf16"]
    assert (
        h200_nvl.memory_bytes == h200.memory_bytes and h200_nvl.peak_flops["bf16"] < h200.peak_flops["bf16"]
    )
    assert h100_nvl.memory_bytes == 94e9 and h100_nvl.bandwidth_bytes_per_s == 3.9e12
    pcie, sxm = hardware.get("A100 80GB PCIe"), hardware.get("A100 80GB SXM")
    assert pcie.peak_flops == sxm.peak_flops and pcie.bandwidth_bytes_per_s < sxm.bandwidth_bytes_per_s


def test_l2_sizes_are_whole_mib_and_far_below_memory():
    with_l2 = [s for s in hardware.catalog("gpu") if s.l2_bytes is not None]
    assert {s.name for s in with_l2} >= {"T4", "A100 80GB SXM", "H100 SXM", "H200 SXM", "H200 NVL"}
    for spec in with_l2:
        assert spec.l2_bytes % 2**20 == 0 and 2**20 <= spec.l2_bytes <= 128 * 2**20
    assert hardware.get("A100 80GB SXM").l2_bytes == 40 * 2**20  # torch reports 41,943,040 on an A100
    assert hardware.get("H100 SXM").l2_bytes == 50 * 2**20


def test_l2_is_a_gpu_key_and_must_be_a_positive_int():
    base = 'name = "x"\nkind = "{kind}"\nsource = "s"\nsource_date = "2024"\nl2_bytes = {l2}\n'
    assert hardware._parse_catalog("[[device]]\n" + base.format(kind="gpu", l2=4096))[0].l2_bytes == 4096
    with pytest.raises(ValueError, match="l2_bytes"):
        hardware._parse_catalog("[[device]]\n" + base.format(kind="gpu", l2=-1))
    with pytest.raises(ValueError, match="l2_bytes"):
        hardware._parse_catalog("[[device]]\n" + base.format(kind="cpu", l2=4096))


def test_apple_chips_are_gpus_with_unified_memory_and_a_consistent_clock():
    chips = [s for s in hardware.catalog("gpu") if s.name.startswith("Apple")]
    assert [s.name for s in chips] == ["Apple M1 Pro", "Apple M1 Max"]
    for chip in chips:
        assert "unified" in chip.memory_type and chip.source.startswith("Apple")
        # Apple's TFLOP/s over 128 lanes per GPU core x 2 FLOP: one clock, about 1.27 GHz, for both
        assert chip.peak_flops["fp32"] / (2 * chip.fp32_lanes) == pytest.approx(1.27e9, rel=0.01)
    assert hardware.get("m1 max").bandwidth_bytes_per_s == 2 * hardware.get("M1 Pro").bandwidth_bytes_per_s


def test_every_catalog_gpu_has_the_figures_the_calculators_read():
    for spec in hardware.catalog("gpu"):
        assert spec.memory_bytes and spec.bandwidth_bytes_per_s and spec.peak_flops, spec.name


def test_catalog_lists_gpus_first_even_when_the_file_puts_apple_after_the_cpus():
    kinds = [s.kind for s in hardware.catalog()]
    assert kinds == sorted(kinds, key=hardware.KINDS.index)
