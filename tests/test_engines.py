"""lab_utils.engines: sourced engine profiles applied to the serving bounds.

The profiles' figures are re-derived here from the raw measurements their sources publish
(quoted with each test), through the course's own bounds, so a figure typed into
lab_utils/data/engines.toml that its source does not give fails."""

import math
import re
from pathlib import Path

import pytest

from lab_utils import assumptions, catalogs, engines, llms, serving

LLAMA_2_7B = llms.LLMConfig(
    name="Llama-2-7B",
    aliases=(),
    n_layers=32,
    hidden=4096,
    family="llama",
    n_heads=32,
    n_kv_heads=32,
    ffn_hidden=11008,
    vocab_size=32000,
    source="meta-llama/Llama-2-7b-hf config.json",
    source_date="2023-07",
)
"""LLaMA (2) 7B, the model of the TensorRT-LLM v0.5/v0.6 tables, llama.cpp's discussion 4167
and llama2-webui's GPTQ row."""

LLAMA_2_70B = llms.LLMConfig(
    name="Llama-2-70B",
    aliases=(),
    n_layers=80,
    hidden=8192,
    family="llama",
    n_heads=64,
    n_kv_heads=8,
    ffn_hidden=28672,
    vocab_size=32000,
    source="meta-llama/Llama-2-70b-hf config.json",
    source_date="2023-07",
)
"""Llama 2 70B, the model of the TensorRT-LLM H200 FP8 rows (Falcon180B-H200 blog)."""


BIBLIOGRAPHY = set(
    re.findall(r"^@\w+\{([^,]+),", (Path(__file__).parents[1] / "book" / "references.bib").read_text(), re.M)
)


def _decode_efficiency(tokens_per_s, device, weight_bytes_per_param, context_len=64):
    return tokens_per_s * serving.decode_step_s(
        LLAMA_2_7B, device=device, context_len=context_len, weight_bytes_per_param=weight_bytes_per_param
    )


def test_llama_2_7b_shape_counts_its_published_size():
    assert LLAMA_2_7B.n_params == 6_738_415_616  # "6.74 B" in llama-bench's table


def test_catalog_records_are_sourced_and_dated():
    profiles = engines.catalog()
    assert {p.name for p in profiles} >= {
        "bound",
        "vllm",
        "tensorrt-llm",
        "transformers-gptq",
        "llama.cpp-metal",
        "tensorrt-llm-fp8",
    }
    for profile in profiles:
        assert catalogs.DATE.match(profile.source_date), profile.name
        assert profile.title and profile.source and profile.derived, profile.name
        if profile.name != "bound":
            assert profile.url.startswith("https://"), profile.name
            assert profile.cite in BIBLIOGRAPHY, f"add {profile.cite!r} to book/references.bib"
        for source in profile.further_sources:
            assert catalogs.DATE.match(source.source_date) and source.url.startswith("https://")
            assert source.title and source.source and source.derived and source.figures, profile.name
            assert source.cite in BIBLIOGRAPHY, f"add {source.cite!r} to book/references.bib"


def test_llama_cpp_metal_decode_per_format_from_discussion_4167():
    """M1 Pro row: tg128 F16 12.75, Q8_0 21.95, Q4_0 35.52 tokens/s (Q8_0 8.5 bits, Q4_0 4.5 bits)."""
    profile = engines.get("llama.cpp-metal")
    for tokens_per_s, weight_bytes, bits in ((12.75, 2.0, 16), (21.95, 8.5 / 8, 8), (35.52, 4.5 / 8, 4)):
        derived = _decode_efficiency(tokens_per_s, "Apple M1 Pro", weight_bytes)
        assert profile.decode_efficiency[bits] == pytest.approx(derived, abs=0.005)


def test_llama_cpp_metal_prefill_from_discussion_4167():
    """M1 Pro row: pp512 F16 262.65 tokens/s against the bound at Apple's 5.2 TFLOP/s."""
    derived = 262.65 * serving.prefill_s(LLAMA_2_7B, device="Apple M1 Pro", prompt_len=512) / 512
    assert engines.get("llama.cpp-metal").prefill_efficiency == pytest.approx(derived, abs=0.005)


def test_transformers_gptq_decode_from_llama2_webui_t4_row():
    """Llama-2-7b-Chat-GPTQ 4-bit on a Colab T4: 18.19 tokens/s, about a fifth of the bound."""
    derived = _decode_efficiency(18.19, "T4", 0.5)
    assert engines.get("transformers-gptq").decode_efficiency[4] == pytest.approx(derived, abs=0.005)


def test_tensorrt_llm_prefill_and_per_request_from_two_first_token_latencies():
    """A100 FP16, LLaMA 7B, batch 1: 16 ms at 128 prompt tokens, 133 ms at 2,048 (v0.5)."""
    short, long = (serving.prefill_s(LLAMA_2_7B, device="A100 80GB SXM", prompt_len=n) for n in (128, 2048))
    efficiency = (long - short) / (0.133 - 0.016)
    profile = engines.get("tensorrt-llm")
    assert profile.prefill_efficiency == pytest.approx(efficiency, abs=0.005)
    assert profile.per_request_s == pytest.approx(0.016 - short / efficiency, abs=5e-5)


def test_tensorrt_llm_decode_from_the_decode_dominated_throughput_row():
    """A100 FP16, LLaMA 7B, batch 60, 128 in / 2,048 out: 1,928 output tokens/s (v0.6.1)."""
    profile = engines.get("tensorrt-llm")
    cycle_s = 60 * 2048 / 1928
    prefill = serving.prefill_s(LLAMA_2_7B, device="A100 80GB SXM", prompt_len=128, batch=60)
    step_s = (cycle_s - prefill / profile.prefill_efficiency - profile.per_request_s) / 2048
    bound = serving.decode_step_s(LLAMA_2_7B, device="A100 80GB SXM", batch=60, context_len=128 + 1024)
    assert profile.decode_efficiency[16] == pytest.approx(bound / step_s, abs=0.005)


def test_vllm_decode_and_per_request_from_the_inferencebench_sweep():
    """Llama-3.1-8B fp16, one H100, concurrency 1, one-sentence prompts: TPOT 6.48 ms, TTFT 13.98 ms."""
    profile = engines.get("vllm")
    bound_step = serving.decode_step_s("Llama-3.1-8B", device="H100 SXM", context_len=80)
    assert profile.decode_efficiency[16] == pytest.approx(bound_step / 0.00648, abs=0.005)
    bound_prefill = serving.prefill_s("Llama-3.1-8B", device="H100 SXM", prompt_len=40)
    assert "prefill_efficiency" in profile.unsourced  # a short prompt: the decode figure stands in
    assert profile.per_request_s == pytest.approx(0.01398 - bound_prefill / 0.74, abs=5e-5)
    one = serving.estimate("Llama-3.1-8B", device="H100 SXM", prompt_len=40, output_len=128, engine="vllm")
    assert one.ttft_s == pytest.approx(0.01398, abs=1e-4)  # the "about 14 ms", not 4.8 ms


def _vllm_decode_step_s(model, device, precision, seconds):
    """(measured, bound) seconds of one decode step of a Red Hat single-stream row (256 tokens in,
    1,024 out): the request's latency less vLLM's fixed cost of a request and its prefill, which
    computes in 16 bits for W4A16 (the 16-bit figure) and in FP8 for FP8 (the 8-bit figure)."""
    profile = engines.get("vllm")
    bound = serving.estimate(
        model,
        device=device,
        prompt_len=256,
        output_len=1024,
        precision=precision,
        engine="bound",
        usd_per_hour=0,
    )
    assert bound.ttft_s < 0.01 * bound.latency_s  # decode-dominated: 1,024 steps, a short prompt
    prefill_figure = profile.decode_efficiency[8 if precision == "fp8" else 16]
    measured = (seconds - profile.per_request_s - bound.ttft_s / prefill_figure) / 1024
    return measured, (bound.latency_s - bound.ttft_s) / 1024


def test_vllm_8_bit_decode_from_red_hats_single_stream_table():
    """DeepSeek-R1-Distill-Llama-8B (Llama-3.1-8B's shape), one H100, vLLM 0.7.2, one request at a
    time, 256 tokens in / 1,024 out: 5.7 s with FP8-dynamic weights (7.6 s in bf16)."""
    profile = engines.get("vllm")
    assert {"decode_efficiency[8]", "decode_efficiency[4]"} <= set(profile.further_sources[0].figures)
    measured, bound = _vllm_decode_step_s("Llama-3.1-8B", "H100 SXM", "fp8", 5.7)
    assert profile.decode_efficiency[8] == pytest.approx(bound / measured, abs=0.005)
    assert 8 not in profile.weight_format_per_step_s  # one 8-bit row: no fixed cost apart
    # the same table's bf16 row, the same way: vLLM 0.7.2 reached less than vLLM 0.21.0's 0.74
    bf16_measured, bf16_bound = _vllm_decode_step_s("Llama-3.1-8B", "H100 SXM", "bf16", 7.6)
    assert round(bf16_bound / bf16_measured, 2) == 0.65 < profile.decode_efficiency[16]


def test_vllm_4_bit_decode_and_its_fixed_step_cost_from_two_rows():
    """W4A16 (GPTQ), one request at a time, 256 in / 1,024 out, vLLM 0.7.2: the 8B model on one H100
    5.6 s, the 70B on one A100 35.3 s. Two rows, two unknowns: step = bound / e + c."""
    profile = engines.get("vllm")
    small, small_bound = _vllm_decode_step_s("Llama-3.1-8B", "H100 SXM", "int4", 5.6)
    large, large_bound = _vllm_decode_step_s("Llama-3.1-70B", "A100 80GB SXM", "int4", 35.3)
    efficiency = (large_bound - small_bound) / (large - small)
    cost_s = small - small_bound / efficiency
    assert profile.decode_efficiency[4] == pytest.approx(efficiency, abs=0.005)
    assert profile.weight_format_per_step_s[4] == pytest.approx(cost_s, abs=5e-5)
    assert [s.cite for s in profile.further_sources] == [
        "redhat2025r1distillllama8bw8a8",
        "redhat2025r1distillllama70bfp8",
    ]
    # a 4-bit step of vLLM costs its fixed 3.3 ms on top of the bandwidth's share; 16 bits do not
    assert profile.per_step_for(0.5) == 0.0033 and profile.per_step_for(2.0) == 0.0
    times = engines.apply(
        "vllm", weight_bytes_per_param=0.5, prefill_s=0.1, batch_prefill_s=0.1, decode_step_s=0.01
    )
    assert times.decode_step_s == pytest.approx(0.01 / 0.56 + 0.0033)


def test_apply_hand_worked():
    """llama.cpp-metal, F16: a 10 ms decode bound takes 10 / 0.86 ms; TensorRT-LLM: a 100 ms
    prefill bound takes 100 / 0.73 + 6.9 ms; the bound engine changes nothing."""
    metal = engines.apply(
        "llama.cpp-metal", weight_bytes_per_param=2.0, prefill_s=0.1, batch_prefill_s=0.4, decode_step_s=0.010
    )
    assert metal.decode_step_s == pytest.approx(0.010 / 0.86)
    assert metal.ttft_s == pytest.approx(0.1 / 0.69) and metal.batch_prefill_s == pytest.approx(0.4 / 0.69)
    trt = engines.apply(
        "TRT-LLM", weight_bytes_per_param=2.0, prefill_s=0.1, batch_prefill_s=0.1, decode_step_s=0.01
    )
    assert trt.engine == "tensorrt-llm"
    assert trt.ttft_s == pytest.approx(0.1 / 0.73 + 0.0069)
    assert trt.decode_step_s == pytest.approx(0.01 / 0.79)
    same = engines.apply(
        "bound", weight_bytes_per_param=0.5, prefill_s=0.1, batch_prefill_s=0.2, decode_step_s=0.01
    )
    assert (same.ttft_s, same.batch_prefill_s, same.decode_step_s) == (0.1, 0.2, 0.01)


def test_weight_formats_match_the_nearest_sourced_figure():
    profile = engines.get("llama.cpp-metal")
    assert profile.decode_efficiency_for(0.6125) == 0.68  # Q4_K_M, 4.9 bits
    assert profile.decode_efficiency_for(1.0) == 0.79
    assert engines.weight_bits(0.5625) == 4.5


def test_unknown_engine_names_the_allowed_ones():
    with pytest.raises(ValueError, match="engine='sglang'.*allowed: 'bound', 'vllm', 'tensorrt-llm'"):
        engines.get("sglang")
    with pytest.raises(ValueError, match="allowed"):
        serving.estimate("llama-3.1-8b", device="H100 SXM", prompt_len=100, output_len=10, engine="sglang")
    with pytest.raises(TypeError, match="engine must be a str"):
        engines.get(0.7)


def test_a_format_no_source_gives_is_refused_not_guessed():
    with pytest.raises(ValueError, match="weight_bytes_per_param=0.5 .*only for 16-bit"):
        engines.get("tensorrt-llm").decode_efficiency_for(0.5)
    with pytest.raises(ValueError, match="32-bit weights.*4-bit, 8-bit, 16-bit"):
        engines.get("llama.cpp-metal").decode_efficiency_for(4.0)
    with pytest.raises(ValueError, match="decode_step_s"):
        engines.apply(
            "bound", weight_bytes_per_param=2.0, prefill_s=0.1, batch_prefill_s=0.1, decode_step_s=-1.0
        )


def test_malformed_records_are_refused():
    record = dict(
        name="fast",
        description="d",
        decode_efficiency={"16": 1.2},
        title="t",
        source="s",
        source_date="2026-01",
        derived="x",
    )
    with pytest.raises(ValueError, match=r"decode_efficiency\[16\]"):
        engines._profile(record)
    with pytest.raises(ValueError, match="per_step_s"):
        engines._profile({**record, "decode_efficiency": {"16": 0.9}, "per_step_s": -0.001})
    with pytest.raises(ValueError, match="unknown key"):
        engines._profile({**record, "decode_efficiency": {"16": 0.9}, "speedup": 2})
    source = dict(
        figures=["decode_efficiency[16]"],
        title="t",
        source="s",
        source_date="2025-02",
        url="https://x",
        cite="c",
        derived="d",
    )
    good = {**record, "decode_efficiency": {"16": 0.9}, "further_sources": [source]}
    assert engines._profile(good).further_sources[0].figures == ("decode_efficiency[16]",)
    with pytest.raises(ValueError, match="further_sources entry needs exactly"):
        engines._profile({**good, "further_sources": [{**source, "speedup": 2}]})
    with pytest.raises(ValueError, match="source_date must be YYYY-MM"):
        engines._profile({**good, "further_sources": [{**source, "source_date": "Feb 2025"}]})


@pytest.mark.parametrize("profile", engines.catalog(), ids=lambda p: p.name)
def test_no_profile_makes_an_estimate_faster_than_the_bound(profile):
    for bits in profile.decode_efficiency:
        if bits == 32:
            continue
        shape = dict(
            device="H100 SXM", prompt_len=1000, output_len=200, batch=8, weight_bytes_per_param=bits / 8
        )
        bound = serving.estimate("llama-3.1-8b", engine="bound", **shape)
        engine = serving.estimate("llama-3.1-8b", engine=profile.name, **shape)
        assert engine.engine == profile.name
        assert engine.ttft_s >= bound.ttft_s and engine.tpot_s >= bound.tpot_s
        assert engine.tokens_per_s <= bound.tokens_per_s and engine.latency_s >= bound.latency_s


def test_estimate_names_its_engine_and_the_default_is_what_practitioners_run():
    default = assumptions.get("engine")
    assert default.source and default.source_date and default.option == "--engine"
    assert set(default.value) == {"gpu", "apple", "cpu"}
    for device, kind in (
        ("H100 SXM", "gpu"),
        ("T4", "gpu"),
        ("Apple M1 Max", "apple"),
        ("Intel Xeon Platinum 8480+", "cpu"),
    ):
        assert engines.default_for(device) == engines.get(default.value[kind]).name
    result = serving.estimate("llama-3.1-8b", device="H100 SXM", prompt_len=500, output_len=200)
    assert result.engine == "vllm" != "bound"  # the paper's formula is a named option, not the default
    assert (
        serving.estimate("llama-3.1-8b", device="Apple M1 Max", prompt_len=500, output_len=200).engine
        == "llama.cpp-metal"
    )
    with pytest.raises(TypeError, match="needs a device"):
        engines.get(None)


def test_a_figure_no_source_gives_takes_the_nearest_sourced_regime_and_says_so():
    """TensorRT-LLM has a sourced 16-bit decode figure only: with 4-bit weights its decode takes
    that figure (never the bound), and the estimate says so. vLLM has no compute figure: its
    prefill takes the decode figure of the bits it computes in, and the estimate says so."""
    shape = dict(device="H100 SXM", prompt_len=500, output_len=200, precision="int4")
    trt = serving.estimate("llama-3.1-8b", engine="tensorrt-llm", **shape)
    bound = serving.estimate("llama-3.1-8b", engine="bound", **shape)
    assert trt.engine_notes == (
        "tensorrt-llm with 4-bit weights: no published decode figure; its 16-bit figure (0.79 of the "
        "bandwidth) stands in",
    )
    step_s = (trt.latency_s - trt.ttft_s) / trt.output_len  # the decode steps alone, at batch 1
    assert step_s == pytest.approx((bound.latency_s - bound.ttft_s) / bound.output_len / 0.79)
    assert bound.engine_notes == ()
    vllm = serving.estimate("llama-3.1-8b", engine="vllm", **shape)
    assert vllm.engine_notes == (  # W4A16 computes in 16 bits: the 16-bit figure, not the 4-bit one
        "vllm's compute: no published figure; its 16-bit decode figure (0.74) stands in",
    )
    step_s = (vllm.latency_s - vllm.ttft_s) / vllm.output_len
    assert step_s == pytest.approx((bound.latency_s - bound.ttft_s) / bound.output_len / 0.56 + 0.0033)
    assert vllm.ttft_s == pytest.approx(bound.ttft_s / 0.74 + engines.get("vllm").per_request_s)
    fp8 = serving.estimate("llama-3.1-8b", engine="vllm", **{**shape, "precision": "fp8"})
    assert fp8.engine_notes == (
        "vllm's compute: no published figure; its 8-bit decode figure (0.44) stands in",
    )
    sixteen = serving.estimate("llama-3.1-8b", engine="vllm", **{**shape, "precision": "bf16"})
    assert not any("decode figure;" in note for note in sixteen.engine_notes)


def test_no_profile_sits_at_the_bound_without_a_source():
    """Every part of every profile but "bound" is below 1 of its bound: a sourced figure, or the
    nearest sourced regime's (engines.step_time and apply never fall back to the bound)."""
    for profile in engines.catalog():
        if profile.name == "bound":
            continue
        for dtype in ("bf16", "fp8"):
            for bits in (4, 8, 16):
                time = engines.step_time(
                    profile, compute_s=1.0, memory_s=1.0, compute_dtype=dtype, weight_bytes_per_param=bits / 8
                )
                assert time.bandwidth_efficiency < 1 and time.compute_efficiency < 1, (
                    profile.name,
                    dtype,
                    bits,
                )


def test_tensorrt_llm_fp8_from_the_nim_concurrency_1_row():
    """NIM 1.8.0, Llama-3.3-70B FP8 on 2 x H100 (TP2), 5,000 in / 500 out, concurrency 1: ITL
    18.58 ms (bandwidth regime) and TTFT 406.77 ms (compute regime)."""
    profile = engines.get("tensorrt-llm-fp8")
    pair = serving.replica("H100 SXM", 2)
    shape = dict(device=pair, precision="fp8", kv_bytes_per_value=1)
    decode = serving.step("Llama-3.1-70B", decode_contexts={5250: 1}, **shape)
    prefill = serving.step("Llama-3.1-70B", prefill_chunks=[(5000, 0)], **shape)
    assert decode.memory_s > decode.compute_s and prefill.compute_s > prefill.memory_s
    assert profile.decode_efficiency[8] == pytest.approx(decode.memory_s / 0.01858, abs=0.005)
    assert profile.compute_efficiency["fp8"] == pytest.approx(prefill.compute_s / 0.40677, abs=0.005)


def test_an_older_tensorrt_llm_reached_less_fp8_decode():
    """Llama2-70B FP8 on one H200, TensorRT-LLM v0.7a (2023): 128/2,048 at batch 192, 2,941
    tokens/s; 128/4,096 at batch 96, 1,946 tokens/s (static batches, FP8 KV cache): 0.34 and
    0.44 of the decode bound, below the 2025 engine's figure."""
    derived = []
    for batch, output_len, tokens_per_s in ((192, 2048, 2941), (96, 4096, 1946)):
        shape = dict(device="H200 SXM", precision="fp8")
        prefill = serving.prefill_s(LLAMA_2_70B, prompt_len=128, batch=batch, **shape)
        step_s = (batch * output_len / tokens_per_s - prefill) / output_len
        assert prefill < 0.02 * batch * output_len / tokens_per_s  # decode-dominated rows
        bound_s = serving.decode_step_s(
            LLAMA_2_70B, batch=batch, context_len=128 + output_len // 2, kv_bytes_per_value=1, **shape
        )
        derived.append(bound_s / step_s)
    assert [round(d, 2) for d in derived] == [0.34, 0.44]
    assert max(derived) < engines.get("tensorrt-llm-fp8").decode_efficiency[8]


def test_bounds_stay_bounds():
    """Naming an engine changes the estimate, never the bound functions."""
    before = serving.decode_step_s("llama-3.1-8b", device="Apple M1 Max", context_len=512)
    estimate = serving.estimate(
        "llama-3.1-8b", device="Apple M1 Max", prompt_len=16, output_len=1024, engine="llama.cpp-metal"
    )
    assert serving.decode_step_s("llama-3.1-8b", device="Apple M1 Max", context_len=512) == before
    assert estimate.tpot_s > before / 0.87
    assert math.isfinite(estimate.output_tokens_per_s)
