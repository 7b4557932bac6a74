"""Tests of lab_utils.hardware: the catalog matches the course's facts (shared facts.md),
lookups forgive spelling, errors say what went wrong."""

import copy
import dataclasses
import pickle
import re

import pytest
from hypothesis import given, strategies as st

from lab_utils import hardware, lookup
from lab_utils.hardware import DTYPES, Spec, catalog, get

# facts.md, GPU table: memory (GB), bandwidth (GB/s), FP32, BF16/FP16 tensor (TFLOP/s),
# TDP (W). bf16 None: the device has FP16 only.
GPU_FACTS = {
    # name:           (memory_GB, bw_GB_s, fp32, bf16, fp16, tdp_W)
    "T4":             (16, 320, 8.1, None, 65, 70),
    "L4":             (24, 300, 30.3, 121, 121, 72),
    "A10":            (24, 600, 31.2, 125, 125, 150),
    "A100 40GB SXM":  (40, 1555, 19.5, 312, 312, 400),
    "A100 80GB SXM":  (80, 2039, 19.5, 312, 312, 400),
    "H100 SXM":       (80, 3350, 67, 989, 989, 700),
    "H100 PCIe":      (80, 2000, 51, 756, 756, 350),
    "H200 SXM":       (141, 4800, 67, 989, 989, 700),
    "RTX 3090":       (24, 936, 35.6, 71, 71, 350),
    "RTX 4090":       (24, 1008, 82.6, 165, 165, 450),
    "RTX A6000":      (48, 768, 38.7, 155, 155, 300),
    "L40S":           (48, 864, 91.6, 362, 362, 350),
}

# facts.md, GPU table: the "FP8 / INT8" column ("-" = absent), and TF32 where given.
LOW_PRECISION_FACTS = {
    # name:           (fp8, int8, tf32) in TFLOP/s or TOP/s
    "T4":             (None, 130, None),
    "L4":             (242, 242, None),
    "A10":            (None, 250, None),
    "A100 40GB SXM":  (None, 624, 156),
    "A100 80GB SXM":  (None, 624, 156),
    "H100 SXM":       (1979, 1979, 495),
    "H100 PCIe":      (1513, 1513, None),
    "H200 SXM":       (1979, 1979, None),
    "RTX 3090":       (None, 284, None),
    "RTX 4090":       (330, 661, None),
    "RTX A6000":      (None, 310, None),
    "L40S":           (733, 733, None),
}

MEMORY_TYPES = {
    "T4": "GDDR6", "L4": "GDDR6", "A10": "GDDR6", "A100 40GB SXM": "HBM2",
    "A100 80GB SXM": "HBM2e", "H100 SXM": "HBM3", "H100 PCIe": "HBM2e", "H200 SXM": "HBM3e",
    "RTX 3090": "GDDR6X", "RTX 4090": "GDDR6X", "RTX A6000": "GDDR6", "L40S": "GDDR6",
}

# facts.md, "Computed ridge points" (dense BF16, FP16 on the T4 / bandwidth), FLOP per byte.
RIDGE_FACTS = {
    ("T4", "fp16"): 203,
    ("L4", "bf16"): 403,
    ("A100 80GB SXM", "bf16"): 153,
    ("H100 SXM", "bf16"): 295,
    ("H200 SXM", "bf16"): 206,
    ("RTX 4090", "bf16"): 164,
}

# The brief's SM configurations (NVIDIA architecture whitepapers).
SM_CONFIG = {
    "T4": (40, 64), "L4": (58, 128), "A10": (72, 128), "A100 40GB SXM": (108, 64),
    "A100 80GB SXM": (108, 64), "H100 SXM": (132, 128), "H100 PCIe": (114, 128),
    "H200 SXM": (132, 128), "RTX 3090": (82, 128), "RTX 4090": (128, 128),
    "RTX A6000": (84, 128), "L40S": (142, 128),
}

CPU_NAMES = ("AMD EPYC 9684X", "Intel Xeon Platinum 8480+", "Colab CPU runtime")


def rel(value, expected, tol=1e-9):
    return value == pytest.approx(expected, rel=tol)


# ----------------------------------------------------------------------------- catalog values


def test_catalog_holds_exactly_the_facts_devices():
    assert [s.name for s in catalog("gpu")] == list(GPU_FACTS)
    assert [s.name for s in catalog("cpu")] == list(CPU_NAMES)
    assert len(catalog()) == len(GPU_FACTS) + len(CPU_NAMES)


@pytest.mark.parametrize("name", GPU_FACTS)
def test_gpu_figures_match_facts(name):
    memory_gb, bw_gb_s, fp32, bf16, fp16, tdp = GPU_FACTS[name]
    spec = get(name)
    assert spec.kind == "gpu"
    assert spec.memory_bytes == memory_gb * 10**9
    assert isinstance(spec.memory_bytes, int)
    assert rel(spec.bandwidth_bytes_per_s, bw_gb_s * 1e9)
    assert rel(spec.peak_flops["fp32"], fp32 * 1e12)
    assert rel(spec.peak_flops["fp16"], fp16 * 1e12)
    if bf16 is None:
        assert "bf16" not in spec.peak_flops
    else:
        assert rel(spec.peak_flops["bf16"], bf16 * 1e12)
    assert spec.tdp_watts == tdp
    assert spec.memory_type == MEMORY_TYPES[name]


@pytest.mark.parametrize("name", LOW_PRECISION_FACTS)
def test_fp8_int8_tf32_match_facts(name):
    spec = get(name)
    for dtype, tera in zip(("fp8", "int8", "tf32"), LOW_PRECISION_FACTS[name]):
        if tera is None:
            assert dtype not in spec.peak_flops, (name, dtype)
        else:
            assert rel(spec.peak_flops[dtype], tera * 1e12), (name, dtype)


def test_t4_has_fp16_and_int8_but_no_bf16_or_tf32():
    t4 = get("T4")
    assert set(t4.peak_flops) == {"fp32", "fp16", "int8"}
    assert "BF16" in t4.note and "TF32" in t4.note


@pytest.mark.parametrize(("name", "dtype"), RIDGE_FACTS)
def test_ridge_points_match_facts(name, dtype):
    assert get(name).ridge_point(dtype) == pytest.approx(RIDGE_FACTS[(name, dtype)], rel=0.01)


def test_ridge_point_defaults_to_bf16():
    h100 = get("H100 SXM")
    assert h100.ridge_point() == h100.ridge_point("bf16") == pytest.approx(989 / 3.35)


@pytest.mark.parametrize("name", SM_CONFIG)
def test_sm_configuration(name):
    sms, lanes = SM_CONFIG[name]
    spec = get(name)
    assert (spec.sm_count, spec.fp32_lanes_per_sm) == (sms, lanes)
    assert spec.fp32_lanes == sms * lanes
    # FP32 peak = lanes x 2 FLOP x boost clock: the implied clock must be a real GPU clock.
    implied_clock_ghz = spec.peak_flops["fp32"] / (2 * spec.fp32_lanes) / 1e9
    assert 1.0 < implied_clock_ghz < 3.0, implied_clock_ghz


def test_h100_and_h200_lanes():
    assert get("H100 SXM").fp32_lanes == 16_896
    assert get("H200 SXM").fp32_lanes == 16_896  # facts.md: same GH100 configuration


def test_h200_memory():
    assert get("h200").memory_bytes == 141e9


def test_epyc_9684x():
    epyc = get("epyc 9684x")
    assert epyc.name == "AMD EPYC 9684X" and epyc.kind == "cpu"
    assert epyc.bandwidth_bytes_per_s == pytest.approx(12 * 8 * 4.8e9) == pytest.approx(460.8e9)
    assert epyc.peak_flops["fp32"] == pytest.approx(96 * 2.55e9 * 32)
    assert epyc.peak_flops["fp32"] == pytest.approx(7.8e12, rel=0.01)
    assert (epyc.cores, epyc.clock_hz) == (96, 2.55e9)
    assert epyc.fp32_lanes == 96 * 16
    assert epyc.memory_bytes == 6e12
    assert epyc.sm_count is None and epyc.fp32_lanes_per_sm is None


def test_xeon_8480():
    xeon = get("Intel Xeon Platinum 8480+")
    assert xeon.bandwidth_bytes_per_s == pytest.approx(307.2e9)
    assert xeon.peak_flops["fp32"] == pytest.approx(56 * 2.0e9 * 64)
    assert xeon.peak_flops["fp32"] == pytest.approx(7.2e12, rel=0.01)
    assert xeon.fp32_lanes == 56 * 32
    assert xeon.memory_bytes == 4e12


def test_colab_cpu_unpublished_figures_are_none():
    colab = get("colab cpu")
    assert colab.kind == "cpu"
    assert colab.cores == 1
    assert colab.memory_bytes == pytest.approx(12.7e9)
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


def test_spec_is_frozen_and_read_only():
    spec = get("H100 SXM")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.memory_bytes = 1
    with pytest.raises(TypeError):
        spec.peak_flops["bf16"] = 1.0
    assert isinstance(spec.aliases, tuple)
    assert hash(spec) == hash(get("h100"))


def test_spec_copies_and_pickles():
    spec = get("L4")
    assert copy.deepcopy(spec) == spec
    assert pickle.loads(pickle.dumps(spec)) == spec


def test_spec_can_be_built_by_hand():
    spec = Spec(name="toy", kind="gpu", bandwidth_bytes_per_s=1e12, peak_flops={"bf16": 100e12},
                source="test", source_date="2026")
    assert spec.ridge_point() == pytest.approx(100)
    assert spec.fp32_lanes is None


def test_catalog_is_cached():
    assert catalog() is catalog()
    assert get("h100") is get("H100 SXM")


# ----------------------------------------------------------------------------- lookups


@pytest.mark.parametrize(
    ("spelling", "name"),
    [
        ("H100 SXM", "H100 SXM"), ("h100-sxm", "H100 SXM"), ("H100_SXM", "H100 SXM"),
        ("h100", "H100 SXM"), ("  H100  ", "H100 SXM"), ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("h100 pcie", "H100 PCIe"),
        ("a100", "A100 80GB SXM"), ("A100-SXM4-40GB", "A100 40GB SXM"),
        ("h200", "H200 SXM"), ("4090", "RTX 4090"), ("NVIDIA GeForce RTX 3090", "RTX 3090"),
        ("a6000", "RTX A6000"), ("l40s", "L40S"), ("Tesla T4", "T4"),
        ("epyc 9684x", "AMD EPYC 9684X"), ("AMD EPYC 9684X 96-Core Processor", "AMD EPYC 9684X"),
        ("xeon 8480+", "Intel Xeon Platinum 8480+"), ("colab cpu", "Colab CPU runtime"),
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
