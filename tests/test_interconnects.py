"""interconnects: hand-worked vendor figures, every catalog GPU covered, the data checked."""

import doctest

import pytest

from lab_utils import hardware, interconnects


def test_h100_sxm_has_nvlink_4_at_450_gb_per_s_each_way_and_pcie_gen5_x16():
    link = interconnects.get("H100 SXM")
    assert (link.nvlink_generation, link.nvlink_bytes_per_s_each_way) == (4, 450e9)  # 900 GB/s both ways
    assert (link.pcie_generation, link.pcie_lanes) == (5, 16)
    assert link.pcie_bytes_per_s_each_way == pytest.approx(63.0e9, rel=0.01)  # 16 x 32 GT/s x 128/130 / 8


def test_pcie_gen4_x16_is_31_5_gb_per_s_each_way_and_a_card_without_nvlink_has_none():
    link = interconnects.get("rtx 4090")
    assert link.pcie_bytes_per_s_each_way == pytest.approx(31.5e9, rel=0.001)
    assert (link.nvlink_generation, link.nvlink_bytes_per_s_each_way) == (0, 0.0)


def test_records_name_catalog_gpus_and_cover_the_ones_the_notebooks_compare():
    names = {link.name for link in interconnects.catalog()}
    assert names <= {spec.name for spec in hardware.catalog("gpu")}
    assert {"T4", "A100 80GB SXM", "H100 SXM", "H200 SXM", "RTX 4090", "L40S"} <= names
    assert all(link.source and link.source_date for link in interconnects.catalog())


def test_a_cpu_or_unknown_name_is_refused_with_the_name():
    with pytest.raises(ValueError, match="AMD EPYC 9684X"):
        interconnects.get("AMD EPYC 9684X")
    with pytest.raises(ValueError, match="no such gpu"):
        interconnects.get("no such gpu")


def test_docstring_examples():
    assert doctest.testmod(interconnects).failed == 0
