"""lab_utils.roofline: counts, intensity and the roofline on known values, over NumPy arrays too;
the figure (lab_utils.plots.roofline, also plots.roofline); bad input."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lab_utils import hardware, plots, roofline


def test_matmul_flops_is_2mnk():
    assert roofline.matmul_flops(2, 3, 4) == 48
    assert roofline.matmul_flops(1024, 1024, 1024) == 2 * 1024**3
    assert roofline.matmul_flops(1, 4096, 4096) == 2 * 4096 * 4096


def test_matmul_bytes_reads_each_operand_once_and_writes_the_result_once():
    # (2 x 4) @ (4 x 3): 8 + 12 elements read, 6 written
    assert roofline.matmul_bytes(2, 3, 4, 4) == 4 * (8 + 12 + 6)
    assert roofline.matmul_bytes(1024, 1024, 1024, 2) == 2 * 3 * 1024**2
    assert roofline.matmul_bytes(8, 8, 8, 0.5) == 0.5 * 3 * 64  # 4-bit values


@given(st.integers(min_value=1, max_value=50_000))
def test_square_intensity_is_n_over_6_in_fp32_and_n_over_3_in_fp16(n):
    assert math.isclose(roofline.matmul_intensity(n, n, n, 4), n / 6)
    assert math.isclose(roofline.matmul_intensity(n, n, n, 2), n / 3)


def test_gemv_at_batch_1_in_fp16_is_about_one_flop_per_byte():
    # one token through a 4096 x 4096 fp16 weight: y (1 x 4096) = x (1 x 4096) @ W (4096 x 4096)
    intensity = roofline.matmul_intensity(1, 4096, 4096, 2)
    assert 0.99 < intensity < 1.0
    # batching 8 tokens reuses every weight 8 times: about 8 FLOP per byte
    assert 7.9 < roofline.matmul_intensity(8, 4096, 4096, 2) < 8.0


def test_arithmetic_intensity_divides():
    assert roofline.arithmetic_intensity(600, 100) == 6.0
    assert roofline.arithmetic_intensity(0, 100) == 0.0  # a copy does no arithmetic


def test_attainable_flops_is_the_lower_of_the_two_roofs():
    peak, bandwidth = 100e12, 1e12  # ridge at 100 FLOP/byte
    assert roofline.attainable_flops(peak, bandwidth, 10) == 10e12  # bandwidth bound
    assert roofline.attainable_flops(peak, bandwidth, 100) == peak  # the ridge
    assert roofline.attainable_flops(peak, bandwidth, 1000) == peak  # compute bound
    assert roofline.attainable_flops(peak, bandwidth, 0) == 0.0


def test_attainable_flops_over_an_array_of_intensities_is_one_call():
    # peak 50 TFLOP/s, 2 TB/s: ridge at 25 FLOP/byte
    got = roofline.attainable_flops(50e12, 2e12, np.array([0.5, 25.0, 400.0]))
    assert isinstance(got, np.ndarray)
    # 2e12 x 0.5 = 1e12 (bandwidth bound); 2e12 x 25 = 50e12 = the peak; 400 is past the ridge
    assert got.tolist() == [1e12, 50e12, 50e12]
    assert isinstance(roofline.attainable_flops(50e12, 2e12, 0.5), float)


def test_arrays_broadcast_and_bad_entries_are_named():
    # two devices at once: (peak, bandwidth) = (10, 1) and (4, 2) at intensity 3 -> min(10, 3), min(4, 6)
    assert roofline.attainable_flops(np.array([10.0, 4.0]), np.array([1.0, 2.0]), 3).tolist() == [3.0, 4.0]
    assert roofline.arithmetic_intensity(np.array([600.0, 0.0]), 100).tolist() == [6.0, 0.0]
    with pytest.raises(ValueError, match=r"intensity\[1\]=-2\.0"):
        roofline.attainable_flops(1, 1, np.array([1.0, -2.0]))
    with pytest.raises(ValueError, match=r"peak_flops\[0\]=0\.0"):
        roofline.attainable_flops(np.array([0.0]), 1, 1)
    with pytest.raises(TypeError, match="bytes"):
        roofline.arithmetic_intensity(1, np.array(["a"]))


def test_every_catalog_roof_bends_at_its_ridge_point():
    for spec in hardware.catalog():
        for dtype, peak in spec.peak_flops.items():
            if not spec.bandwidth_bytes_per_s:
                continue
            ridge, bandwidth = spec.ridge_point(dtype), spec.bandwidth_bytes_per_s
            roof = roofline.attainable_flops(peak, bandwidth, np.array([ridge / 2, ridge, 2 * ridge]))
            assert roof == pytest.approx([peak / 2, peak, peak])


def test_roof_of_takes_the_best_peak_the_device_has():
    assert roofline.roof_of("T4").label.startswith("T4, fp16")  # no bf16 on a T4
    assert roofline.roof_of("T4").dtype == "fp16"
    h100 = hardware.get("H100 SXM")
    assert roofline.roof_of("h100").peak_flops == h100.peak_flops["bf16"]
    assert roofline.roof_of("h100").bandwidth_bytes_per_s == h100.bandwidth_bytes_per_s
    epyc = roofline.roof_of("AMD EPYC 9684X")
    assert "fp32" in epyc.label and "vendor specification" in epyc.label
    assert roofline.roof_of("A100", dtype="tf32").peak_flops == hardware.get("A100").peak_flops["tf32"]


def test_roof_of_refuses_a_device_without_bandwidth():
    with pytest.raises(ValueError, match="Colab CPU runtime"):
        roofline.roof_of("Colab CPU runtime")
    with pytest.raises(ValueError, match="tf32"):
        roofline.roof_of("T4", dtype="tf32")


def test_plot_draws_every_roof_and_point():
    points = [
        roofline.Point("fp32 matmul, measured here", 20.0, 5e10),
        roofline.Point("fp32 matmul, measured here", 80.0, 1.5e11),
        roofline.Point("bf16 matmul, measured here", 40.0, 1e9),
    ]
    mine = roofline.Roof("this machine (measured here)", 2e11, 2e10)
    fig, ax = plots.roofline(points, [mine], devices=("T4", "H200"))
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == [
        "T4, fp16 (vendor specification)",
        "H200 SXM, bf16 (vendor specification)",
        "this machine (measured here)",
    ]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert "(FLOP/byte)" in ax.get_xlabel() and "(FLOP/s)" in ax.get_ylabel()
    # the dashed measured roof: bandwidth x intensity below its ridge (10 FLOP/byte), flat above
    x, y = ax.get_lines()[2].get_data()
    assert max(y) == 2e11 and math.isclose(y[0], 2e10 * x[0])
    scattered = [tuple(map(tuple, c.get_offsets())) for c in ax.collections]
    assert scattered == [((20.0, 5e10), (80.0, 1.5e11)), ((40.0, 1e9),)]
    assert [t.get_text() for t in ax.get_legend().get_texts()][-2:] == [
        "fp32 matmul, measured here",
        "bf16 matmul, measured here",
    ]
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_plot_with_the_default_devices():
    import matplotlib.pyplot as plt

    assert not hasattr(roofline, "plot")  # drawing is a face: lab_utils.plots
    fig, ax = plots.roofline()
    assert len(ax.get_lines()) == len(roofline.DEFAULT_DEVICES)
    plt.close(fig)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: roofline.matmul_flops(0, 1, 1), ValueError, "m=0"),
        (lambda: roofline.matmul_flops(1, -2, 1), ValueError, "n=-2"),
        (lambda: roofline.matmul_flops(1, 1, 2.0), TypeError, "k must be a positive int"),
        (lambda: roofline.matmul_flops(True, 1, 1), TypeError, "m must be"),
        (lambda: roofline.matmul_bytes(1, 1, 1, 0), ValueError, "bytes_per_element=0"),
        (lambda: roofline.matmul_bytes(1, 1, 1, "4"), TypeError, "bytes_per_element"),
        (lambda: roofline.arithmetic_intensity(1, 0), ValueError, "bytes=0"),
        (lambda: roofline.arithmetic_intensity(-1, 1), ValueError, "flops=-1"),
        (lambda: roofline.arithmetic_intensity(float("nan"), 1), ValueError, "flops=nan"),
        (lambda: roofline.attainable_flops(0, 1, 1), ValueError, "peak_flops=0"),
        (lambda: roofline.attainable_flops(1, -1, 1), ValueError, "bandwidth_bytes_per_s=-1"),
        (lambda: roofline.attainable_flops(1, 1, -3), ValueError, "intensity=-3"),
        (lambda: roofline.attainable_flops(1, 1, None), TypeError, "intensity"),
        (lambda: roofline.Point("", 1, 1), ValueError, "label"),
        (lambda: roofline.Point("x", 0, 1), ValueError, "intensity=0"),
        (lambda: roofline.Roof("x", 1, float("inf")), ValueError, "bandwidth_bytes_per_s=inf"),
        (lambda: roofline.roof_of("Z80"), ValueError, "Z80"),
        (lambda: plots.roofline(devices="T4"), TypeError, "devices"),
        (lambda: plots.roofline([(1, 2)], devices=()), TypeError, "points"),
        (lambda: plots.roofline(devices=(), intensity_range=(10, 1)), ValueError, "intensity_range"),
        (lambda: plots.roofline(devices=(), intensity_range=(0, 1)), ValueError, r"intensity_range\[0\]=0"),
    ],
)
def test_bad_input_names_the_parameter(call, error, match):
    with pytest.raises(error, match=match):
        call()
