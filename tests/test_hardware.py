"""Tests of lab_utils.hardware: the catalog is sourced, dated and self-consistent, lookups
forgive spelling, errors say what went wrong.

The figures live in lab_utils/data/hardware.toml, each device with its source. These tests do
not copy them: they check invariants (derived figures agree with their inputs, newer parts beat
older ones) and a few figures worked out by hand from the vendor's own document, cited beside them.
"""

import copy
import pickle
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lab_utils import hardware, lookup
from lab_utils.hardware import DTYPES, Spec, catalog, get

GPUS = catalog("gpu")
CPUS = catalog("cpu")
HBM = ("HBM2", "HBM2e", "HBM3", "HBM3e")
GDDR = {
    "GDDR6": 1.1e12,
    "GDDR6X": 1.1e12,
    "GDDR7": 2.1e12,
}  # above any card of that memory: GDDR7 at 32 Gbit/s x 512 bits is 2.05e12
# Apple chips compute on a GPU without tensor cores, in memory shared with the CPU
DISCRETE_GPUS = tuple(s for s in GPUS if "unified" not in (s.memory_type or ""))


def present(name):
    """The catalog's Spec for ``name``, or None when the catalog does not list it."""
    try:
        return get(name)
    except ValueError:
        return None


# ----------------------------------------------------------------------------- hand-worked cases


def test_h100_sxm_figures_worked_from_nvidia_documents():
    h100 = get("H100 SXM")
    # NVIDIA H100 datasheet: BF16 tensor 1,979 TFLOP/s *with sparsity*; dense is half of it.
    assert h100.peak_flops["bf16"] == pytest.approx(1979e12 / 2, rel=1e-3)
    # Same datasheet: 3.35 TB/s HBM3. Ridge point: 989.5e12 / 3.35e12 = 295 FLOP/byte.
    assert h100.bandwidth_bytes_per_s == 3.35e12
    assert h100.ridge_point("bf16") == pytest.approx(295.4, rel=1e-3)
    # H100 architecture whitepaper: 132 SMs x 128 FP32 lanes = 16,896 CUDA cores.
    assert h100.fp32_lanes == 16_896


def test_epyc_9684x_worked_from_the_amd_product_page():
    epyc = get("epyc 9684x")
    # AMD product page: 96 cores, 2.55 GHz base; Zen 4 does 2 x 256-bit FMA per cycle = 32 FP32
    # FLOP per cycle per core: 96 x 2.55e9 x 32 = 7.83e12 FLOP/s.
    assert epyc.peak_flops["fp32"] == pytest.approx(7.8336e12)
    # 12 channels of DDR5-4800, 8 bytes per transfer: 12 x 8 x 4.8e9 = 460.8 GB/s.
    assert epyc.bandwidth_bytes_per_s == pytest.approx(460.8e9)


def test_ridge_point_defaults_to_bf16():
    h100 = get("H100 SXM")
    assert h100.ridge_point() == h100.ridge_point("bf16")


# ----------------------------------------------------------------------------- invariants


def test_catalog_lists_gpus_then_cpus():
    kinds = [s.kind for s in catalog()]
    assert GPUS and CPUS
    assert kinds == sorted(kinds, key=("gpu", "cpu").index)


@pytest.mark.parametrize("spec", catalog(), ids=lambda s: s.name)
def test_ridge_point_is_peak_over_bandwidth(spec):
    if not spec.bandwidth_bytes_per_s:
        pytest.skip(f"{spec.name}: no published bandwidth")
    for dtype, peak in spec.peak_flops.items():
        assert spec.ridge_point(dtype) == pytest.approx(peak / spec.bandwidth_bytes_per_s)


@pytest.mark.parametrize("spec", CPUS, ids=lambda s: s.name)
def test_cpu_fp32_peak_is_cores_x_clock_x_flop_per_cycle(spec):
    if spec.clock_hz is None:
        assert "fp32" not in spec.peak_flops  # unpublished inputs: no peak made up
        return
    assert spec.peak_flops["fp32"] == pytest.approx(
        spec.cores * spec.clock_hz * spec.fp32_flops_per_cycle_per_core
    )
    assert spec.fp32_lanes == spec.cores * spec.fp32_flops_per_cycle_per_core // 2


@pytest.mark.parametrize("spec", GPUS, ids=lambda s: s.name)
def test_gpu_fp32_peak_implies_a_real_clock(spec):
    # FP32 peak = CUDA cores x 2 FLOP (one FMA) x boost clock: the implied clock is a GPU's.
    assert spec.fp32_lanes == spec.sm_count * spec.fp32_lanes_per_sm
    clock_ghz = spec.peak_flops["fp32"] / (2 * spec.fp32_lanes) / 1e9
    assert 1.0 < clock_ghz < 3.0, clock_ghz


@pytest.mark.parametrize("spec", DISCRETE_GPUS, ids=lambda s: s.name)
def test_gpu_precisions_are_ordered_as_tensor_cores_work(spec):
    peaks = spec.peak_flops
    half = peaks.get("bf16", peaks.get("fp16"))
    assert half is not None, "every catalog GPU has a 16-bit tensor peak"
    assert half > peaks["fp32"]  # tensor cores beat the FP32 lanes
    if "bf16" in peaks and "fp16" in peaks:
        assert peaks["bf16"] == peaks["fp16"]  # same tensor path, same rate
    if "tf32" in peaks:
        assert peaks["tf32"] == pytest.approx(half / 2, rel=0.01)  # TF32 at half the 16-bit rate
    if "fp8" in peaks:
        assert peaks["fp8"] == pytest.approx(2 * half, rel=0.02)  # FP8 at twice the 16-bit rate
    if spec.name != "V100 SXM 32GB":  # Volta's tensor cores compute FP16 only (int8 came with Turing)
        assert peaks["int8"] >= half


@pytest.mark.parametrize("spec", DISCRETE_GPUS, ids=lambda s: s.name)
def test_gpu_memory_type_matches_its_bandwidth(spec):
    if spec.memory_type in HBM:
        assert spec.bandwidth_bytes_per_s > (0.8e12 if spec.memory_type == "HBM2" else 1.5e12)
    else:
        assert spec.memory_type in GDDR and spec.bandwidth_bytes_per_s < GDDR[spec.memory_type]


def test_newer_gpus_beat_older_ones():
    h100, a100, t4 = get("H100 SXM"), get("A100 80GB SXM"), get("T4")
    assert h100.peak_flops["bf16"] > a100.peak_flops["bf16"] > t4.peak_flops["fp16"]
    h200 = get("H200 SXM")
    assert h200.memory_bytes > h100.memory_bytes
    assert h200.bandwidth_bytes_per_s > h100.bandwidth_bytes_per_s > a100.bandwidth_bytes_per_s
    assert a100.memory_bytes > get("A100 40GB SXM").memory_bytes
    assert get("RTX 4090").peak_flops["bf16"] > get("RTX 3090").peak_flops["bf16"]
    rtx5090 = present("RTX 5090")
    if rtx5090 is not None:  # 512-bit GDDR7 at 28 Gbit/s per pin: 64 bytes x 28e9 = 1,792 GB/s
        assert rtx5090.bandwidth_bytes_per_s == 512 // 8 * 28e9
    b200 = present("B200")
    if b200 is not None:
        assert b200.bandwidth_bytes_per_s > h100.bandwidth_bytes_per_s


def test_h200_is_an_h100_die_with_more_memory():
    # NVIDIA: the H200 uses the same GH100 configuration as the H100 SXM, with HBM3e.
    h100, h200 = get("H100 SXM"), get("H200 SXM")
    assert h200.fp32_lanes == h100.fp32_lanes
    shared = set(h200.peak_flops) & set(h100.peak_flops)
    assert {"fp32", "bf16", "fp8"} <= shared
    assert all(h200.peak_flops[d] == h100.peak_flops[d] for d in shared)


def test_t4_has_fp16_and_int8_but_no_bf16_or_tf32():
    t4 = get("T4")
    assert set(t4.peak_flops) == {"fp32", "fp16", "int8"}
    assert "BF16" in t4.note and "TF32" in t4.note


def test_colab_cpu_unpublished_figures_are_none():
    colab = get("colab cpu")
    assert colab.kind == "cpu"
    assert colab.bandwidth_bytes_per_s is None
    assert "fp32" not in colab.peak_flops
    assert colab.fp32_lanes is None
    with pytest.raises(ValueError, match="dtype"):
        colab.ridge_point("fp32")


@pytest.mark.parametrize("spec", catalog(), ids=lambda s: s.name)
def test_every_device_is_sourced_and_well_formed(spec):
    assert spec.source.strip()
    assert re.fullmatch(r"\d{4}(-(0[1-9]|1[0-2]))?", spec.source_date)
    assert 2015 <= int(spec.source_date[:4]) <= 2026
    assert spec.kind in ("gpu", "cpu")
    assert set(spec.peak_flops) <= set(DTYPES)
    assert list(spec.peak_flops) == [d for d in DTYPES if d in spec.peak_flops]
    assert all(isinstance(v, float) and v > 0 for v in spec.peak_flops.values())
    assert isinstance(spec.memory_bytes, int) and spec.memory_bytes > 1e9
    if spec.kind == "gpu":
        assert spec.sm_count and spec.fp32_lanes_per_sm and spec.cores is None
    else:
        assert spec.cores and spec.sm_count is None


# ----------------------------------------------------------------------------- Spec object


def test_peak_flops_cannot_be_changed_through_a_spec():
    spec = get("H100 SXM")
    with pytest.raises(TypeError):
        spec.peak_flops["bf16"] = 1.0
    assert isinstance(spec.aliases, tuple)
    assert hash(spec) == hash(get("h100"))


def test_spec_copies_and_pickles():
    spec = get("L4")
    assert copy.deepcopy(spec) == spec
    assert pickle.loads(pickle.dumps(spec)) == spec


def test_spec_can_be_built_by_hand():
    spec = Spec(
        name="toy",
        kind="gpu",
        bandwidth_bytes_per_s=1e12,
        peak_flops={"bf16": 100e12},
        source="test",
        source_date="2026",
    )
    assert spec.ridge_point() == pytest.approx(100)
    assert spec.fp32_lanes is None


def test_catalog_is_cached():
    assert catalog() is catalog()
    assert get("h100") is get("H100 SXM")


# ----------------------------------------------------------------------------- lookups


@pytest.mark.parametrize(
    ("spelling", "name"),
    [
        ("H100 SXM", "H100 SXM"),
        ("h100-sxm", "H100 SXM"),
        ("H100_SXM", "H100 SXM"),
        ("h100", "H100 SXM"),
        ("  H100  ", "H100 SXM"),
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("h100 pcie", "H100 PCIe"),
        ("a100", "A100 80GB SXM"),
        ("A100-SXM4-40GB", "A100 40GB SXM"),
        ("h200", "H200 SXM"),
        ("4090", "RTX 4090"),
        ("NVIDIA GeForce RTX 3090", "RTX 3090"),
        ("a6000", "RTX A6000"),
        ("l40s", "L40S"),
        ("Tesla T4", "T4"),
        ("epyc 9684x", "AMD EPYC 9684X"),
        ("AMD EPYC 9684X 96-Core Processor", "AMD EPYC 9684X"),
        ("xeon 8480+", "Intel Xeon Platinum 8480+"),
        ("colab cpu", "Colab CPU runtime"),
    ],
)
def test_lookup_spellings(spelling, name):
    assert get(spelling).name == name


def test_aliases_unique_across_catalog():
    keys = [lookup.key(s) for spec in catalog() for s in (spec.name, *spec.aliases)]
    assert len(keys) == len(set(keys))


ALL_SPELLINGS = [(s, spec.name) for spec in catalog() for s in (spec.name, *spec.aliases)]


@st.composite
def mangled(draw):
    """A name or alias with random case and random spaces/hyphens/underscores in it."""
    spelling, name = draw(st.sampled_from(ALL_SPELLINGS))
    out = []
    for ch in spelling:
        if ch in " -_":
            ch = ""
        out.append(draw(st.text(alphabet=" -_", max_size=2)))
        out.append(ch.upper() if draw(st.booleans()) else ch.lower())
    out.append(draw(st.text(alphabet=" -_", max_size=2)))
    return "".join(out), name


@given(mangled())
def test_any_case_and_separators_resolve_to_the_same_spec(pair):
    spelling, name = pair
    assert get(spelling) is get(name)


# ----------------------------------------------------------------------------- errors


def test_unknown_name_suggests_close_names():
    with pytest.raises(ValueError) as info:
        get("H10O")
    message = str(info.value)
    assert "name" in message and "'H10O'" in message and "H100 SXM" in message
    assert "closest" in message and "Colab" not in message  # suggestions, not the whole list


def test_unknown_name_without_close_match_lists_the_catalog():
    with pytest.raises(ValueError) as info:
        get("abacus")
    assert "'abacus'" in str(info.value) and "T4" in str(info.value)


@pytest.mark.parametrize("bad", [None, 4090, 3.5, b"h100", ["h100"]])
def test_get_non_str_is_type_error(bad):
    with pytest.raises(TypeError, match="name"):
        get(bad)


@pytest.mark.parametrize("bad", ["", "   ", "-_-"])
def test_get_empty_is_value_error(bad):
    with pytest.raises(ValueError, match="name"):
        get(bad)


def test_ridge_point_missing_dtype_names_what_exists():
    with pytest.raises(ValueError) as info:
        get("T4").ridge_point("bf16")
    message = str(info.value)
    assert "dtype" in message and "bf16" in message and "fp16" in message


def test_ridge_point_unknown_dtype():
    with pytest.raises(ValueError, match="dtype='fp64'"):
        get("H100 SXM").ridge_point("fp64")
    with pytest.raises(TypeError, match="dtype"):
        get("H100 SXM").ridge_point(16)


def test_ridge_point_without_bandwidth():
    spec = Spec(name="toy", kind="cpu", peak_flops={"fp32": 1e12}, source="x", source_date="2026")
    with pytest.raises(ValueError, match="bandwidth"):
        spec.ridge_point("fp32")


def test_catalog_kind_filter():
    gpus, cpus = catalog("gpu"), catalog("cpu")
    assert gpus and all(s.kind == "gpu" for s in gpus)
    assert cpus and all(s.kind == "cpu" for s in cpus)
    assert set(gpus) | set(cpus) == set(catalog()) and not set(gpus) & set(cpus)
    assert catalog(None) == catalog()
    assert catalog("GPU") == gpus


def test_catalog_bad_kind():
    with pytest.raises(ValueError, match="kind"):
        catalog("tpu")
    with pytest.raises(TypeError, match="kind"):
        catalog(1)


# ----------------------------------------------------------------------------- validation

GOOD = """
[[device]]
name = "Toy"
kind = "gpu"
source = "test"
source_date = "2026-01"
[device.peak_flops]
fp32 = 1e12
"""


def test_parse_accepts_a_minimal_device():
    (spec,) = hardware._parse_catalog(GOOD)
    assert spec.name == "Toy" and spec.peak_flops["fp32"] == 1e12


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        (GOOD.replace('source = "test"\n', ""), "source"),
        (GOOD.replace('source_date = "2026-01"\n', ""), "source_date"),
        (GOOD.replace('name = "Toy"\n', ""), "name"),
        (GOOD.replace('kind = "gpu"', 'kind = "tpu"'), "kind"),
        (GOOD.replace("fp32 = 1e12", "fp64 = 1e12"), "fp64"),
        (GOOD.replace("fp32 = 1e12", "fp32 = -1.0"), "peak_flops.fp32"),
        (GOOD.replace("2026-01", "Jan 2026"), "source_date"),
        (GOOD.replace('kind = "gpu"', 'kind = "gpu"\nbandwith = 1e9'), "bandwith"),
        (GOOD.replace('kind = "gpu"', 'kind = "gpu"\ncores = 4'), "cores"),
        (GOOD + GOOD.replace('"Toy"', '"T-O-Y"'), "unique"),
        (GOOD.replace('kind = "gpu"', 'kind = "gpu"\naliases = "toy2"'), "aliases"),
        ("device = 3", "[[device]]"),
        ("[[device]\n", "TOML"),
    ],
)
def test_parse_rejects_bad_catalogs(text, complaint):
    with pytest.raises(ValueError, match=re.escape(complaint)):
        hardware._parse_catalog(text)


def test_parse_cpu_derives_bandwidth_and_peak():
    text = """
[[device]]
name = "Toy CPU"
kind = "cpu"
cores = 4
clock_hz = 3e9
fp32_flops_per_cycle_per_core = 16
memory_channels = 2
memory_transfers_per_s = 3.2e9
bytes_per_transfer = 8
source = "test"
source_date = "2026"
"""
    (spec,) = hardware._parse_catalog(text)
    assert spec.bandwidth_bytes_per_s == 2 * 8 * 3.2e9
    assert spec.peak_flops["fp32"] == 4 * 3e9 * 16
    with pytest.raises(ValueError, match="not both"):
        hardware._parse_catalog(text.replace("cores = 4", "cores = 4\nbandwidth_bytes_per_s = 1e9"))
    with pytest.raises(ValueError, match="bytes_per_transfer"):
        hardware._parse_catalog(text.replace("bytes_per_transfer = 8\n", ""))
