"""serving: decode and prefill bounds on hand-worked cases, the KV-cache limit, throughput that
saturates and never exceeds its bound."""

import math

import pytest

from lab_utils import assumptions, hardware, llms, serving

# A toy model: 2 layers, 2 heads of 4 features, 1 KV head: KV cache = 2 (K, V) x 2 layers x 1 x 4
# values x 2 bytes = 32 bytes per token; 1,000 parameters (100 embedding, 400 per layer, 100 head)
# = 2,000 bytes of weights at 2 bytes each.
_LAYER = llms.Layer(
    attention=llms.Attention(kind="full", n_heads=2, n_kv_heads=1, head_dim=4, v_head_dim=4),
    mlp=llms.MLP(kind="dense", intermediate=16),
    attention_params=200,
    shared_mlp_params=200,
    expert_params=0,
)
TOY = llms.LLMConfig(
    name="toy",
    aliases=(),
    n_layers=2,
    hidden=8,
    source="test",
    source_date="2026",
    n_heads=2,
    n_kv_heads=1,
    layers=(_LAYER, _LAYER),
    embedding_params=100,
    head_params=100,
)
RESERVE = assumptions.value("cuda_context_bytes")


def device(bandwidth_bytes_per_s=1000.0, peak=1e6, memory_bytes=RESERVE + 10**9):
    return hardware.Spec(
        name="toy device",
        kind="gpu",
        memory_bytes=memory_bytes,
        bandwidth_bytes_per_s=bandwidth_bytes_per_s,
        peak_flops={"bf16": peak},
        source="test",
        source_date="2026",
    )


def test_decode_at_batch_1_is_bound_by_reading_the_weights():
    # bytes: 2,000 weights + 10 tokens x 32 = 2,320 B at 1,000 B/s = 2.32 s; compute 2,000 FLOPs / 1e6 = 2 ms
    assert serving.decode_step_s(TOY, device=device(), context_len=10) == pytest.approx(2.32)
    assert serving.decode_limit(TOY, device=device(), context_len=10) == "weights"


def test_decode_with_a_large_batch_and_long_contexts_is_bound_by_the_kv_cache():
    # 10 sequences x 100 tokens x 32 B = 32,000 B of KV cache + 2,000 B of weights = 34 s
    assert serving.decode_step_s(TOY, device=device(), batch=10, context_len=100) == pytest.approx(34.0)
    assert serving.decode_limit(TOY, device=device(), batch=10, context_len=100) == "kv cache"


def test_decode_of_a_huge_batch_on_a_fast_memory_is_compute_bound():
    # 1,000 sequences x (2 x 1,000 params + attention to 1 key: 2 layers x 2 heads x 2 x 8) / 1e6 FLOP/s
    # = 2.064 s; bytes (2,000 + 32,000) / 1e9 = 34 us
    fast = device(bandwidth_bytes_per_s=1e9)
    assert serving.decode_step_s(TOY, device=fast, batch=1000, context_len=1) == pytest.approx(2.064)
    assert serving.decode_limit(TOY, device=fast, batch=1000, context_len=1) == "compute"


def test_decode_reads_weights_in_their_precision_and_the_kv_cache_in_its_own():
    # 4-bit weights: 500 B; fp32 KV: 64 B per token x 10 = 640 B -> 1.14 s
    assert serving.decode_step_s(
        TOY, device=device(), context_len=10, weight_bytes_per_param=0.5, kv_bytes_per_value=4
    ) == pytest.approx(1.14)


def test_prefill_counts_the_weights_and_causal_attention():
    # 2 x 1,000 x 10 tokens = 20,000 + attention 2 x 2 layers x 10² x 8 = 3,200 -> 23,200 FLOPs = 23.2 ms
    fast = device(bandwidth_bytes_per_s=1e9)
    assert serving.prefill_s(TOY, device=fast, prompt_len=10) == pytest.approx(0.0232)
    assert serving.prefill_s(TOY, device=fast, prompt_len=10, batch=3) == pytest.approx(3 * 0.0232)
    # on the slow memory one read of the weights (2 s) takes longer than the arithmetic
    assert serving.prefill_s(TOY, device=device(), prompt_len=10) == pytest.approx(2.0)


def test_max_batch_fits_kv_caches_beside_the_weights_and_the_reserve():
    # free = 2,245 B beside 2,000 B of weights; 320 B per sequence of 10 tokens -> 7
    spec = device(memory_bytes=RESERVE + 2000 + 2245)
    assert serving.max_batch(TOY, device=spec, context_len=10) == 7
    assert serving.max_batch(TOY, device=device(memory_bytes=RESERVE + 1000), context_len=10) == 0


def test_estimate_of_one_request_on_a_slow_memory_worked_by_hand():
    # prompt 4, output 2: prefill 2 s (one weight read); decode at context 4 + 1: (2,000 + 160) B = 2.16 s
    # cycle = 2 + 2 x 2.16 = 6.32 s; 6 tokens per cycle
    e = serving.estimate(TOY, device=device(), prompt_len=4, output_len=2, usd_per_hour=3.6, engine="bound")
    assert e.ttft_s == pytest.approx(2.0)
    assert e.latency_s == pytest.approx(6.32)
    assert e.tpot_s == pytest.approx(3.16)
    assert e.tokens_per_s == pytest.approx(6 / 6.32)
    assert e.output_tokens_per_s == pytest.approx(2 / 6.32)
    assert e.usd_per_million_tokens == pytest.approx(3.6 / (6 / 6.32 * 3600) * 1e6)
    assert e.limit == "weights"
    assert serving.estimate(
        TOY, device=device(), prompt_len=4, output_len=2, efficiency=0.5, engine="bound"
    ).latency_s == pytest.approx(12.64)
    # the default engine of a GPU (vLLM): decode / 0.74, its 7.5 ms per request, prefill / 0.74 too
    # (no figure for its compute regime: the nearest sourced one, the 16-bit decode figure, stands in)
    vllm = serving.estimate(TOY, device=device(), prompt_len=4, output_len=2)
    assert vllm.engine == "vllm" and vllm.ttft_s == pytest.approx(2.0 / 0.74 + 0.0075)
    assert vllm.latency_s == pytest.approx(2.0 / 0.74 + 0.0075 + 2 * 2.16 / 0.74)
    assert vllm.engine_notes == (
        "vllm's compute: no published figure; its 16-bit decode figure (0.74) stands in",
    )


def test_throughput_grows_with_the_batch_saturates_and_never_exceeds_its_bound():
    spec = hardware.get("H100 SXM")
    model = llms.get("Llama-3.1-8B")
    kv_per_sequence = 2 * model.n_layers * model.n_kv_heads * model.head_dim * 2 * 4096  # bf16, 4,096 tokens
    ceiling = min(
        spec.peak_flops["bf16"] / (2 * model.n_params), spec.bandwidth_bytes_per_s / kv_per_sequence
    )
    room = serving.max_batch(model, device=spec, context_len=4096)
    rates = [
        b / serving.decode_step_s(model, device=spec, batch=b, context_len=4096) for b in range(1, room + 1)
    ]
    assert all(rate <= ceiling for rate in rates)
    assert all(later >= earlier for earlier, later in zip(rates, rates[1:]))
    for batch in (1, 8, room):
        e = serving.estimate(model, device=spec, prompt_len=3584, output_len=512, batch=batch)
        assert e.output_tokens_per_s <= batch / serving.decode_step_s(
            model, device=spec, batch=batch, context_len=3584
        )
    assert rates[-1] < 2 * rates[room // 2]  # past half the room, doubling the batch no longer doubles it


def test_a_batch_beyond_the_room_for_its_kv_caches_is_refused():
    spec = device(memory_bytes=RESERVE + 2000 + 2245)
    with pytest.raises(ValueError, match="batch=8.*max_batch"):
        serving.estimate(TOY, device=spec, prompt_len=5, output_len=5, batch=8)


def test_capacity_is_the_largest_batch_within_the_latency_target():
    fast = device(bandwidth_bytes_per_s=1e9)
    best = serving.capacity(TOY, device=fast, prompt_len=4, output_len=2, latency_target_s=1.0)
    assert best.latency_s <= 1.0
    assert (
        serving.estimate(TOY, device=fast, prompt_len=4, output_len=2, batch=best.batch + 1).latency_s > 1.0
    )
    assert serving.capacity(TOY, device=device(), prompt_len=4, output_len=2, latency_target_s=6.0) is None


def test_a_model_or_device_is_a_name_or_a_record_and_bad_ones_are_named():
    by_name = serving.decode_step_s("Llama-3.1-8B", device="H100 SXM", context_len=100)
    by_record = serving.decode_step_s(
        llms.get("Llama-3.1-8B"), device=hardware.get("H100 SXM"), context_len=100
    )
    assert by_name == by_record
    with pytest.raises(TypeError, match="model"):
        serving.decode_step_s(8e9, device="H100 SXM", context_len=100)
    with pytest.raises(TypeError, match="device"):
        serving.decode_step_s(TOY, device=3.35e12, context_len=100)
    with pytest.raises(ValueError, match="context_len"):
        serving.decode_step_s(TOY, device=device(), context_len=0)
    with pytest.raises(ValueError, match="batch"):
        serving.decode_step_s(TOY, device=device(), batch=0, context_len=1)
    no_kv = llms.LLMConfig(
        name="no heads", aliases=(), n_layers=2, hidden=8, n_params=1000, source="t", source_date="2026"
    )
    with pytest.raises(ValueError, match="KV cache"):
        serving.max_batch(no_kv, device=device(), context_len=10)
    assert math.isfinite(serving.prefill_s(no_kv, device=device(), prompt_len=3))


def test_docstring_examples():
    import doctest

    assert doctest.testmod(serving).failed == 0


def test_at_load_takes_the_smallest_batch_that_keeps_up():
    fast = device(bandwidth_bytes_per_s=1e6, peak=1e9)  # reading the weights dominates: batching pays
    one = serving.estimate(TOY, device=fast, prompt_len=4, output_len=2)
    assert (
        serving.at_load(TOY, device=fast, prompt_len=4, output_len=2, requests_per_s=one.requests_per_s / 2)
        == one
    )
    busy = serving.at_load(
        TOY, device=fast, prompt_len=4, output_len=2, requests_per_s=3 * one.requests_per_s
    )
    assert busy.requests_per_s >= 3 * one.requests_per_s
    assert (
        serving.estimate(TOY, device=fast, prompt_len=4, output_len=2, batch=busy.batch - 1).requests_per_s
        < 3 * one.requests_per_s
    )
    small = device(
        bandwidth_bytes_per_s=1e6, peak=1e9, memory_bytes=RESERVE + 2000 + 2245
    )  # room for 7 sequences
    assert serving.at_load(TOY, device=small, prompt_len=4, output_len=2, requests_per_s=1e9) is None


def test_llama_8b_on_one_h100_at_4096_tokens_worked_by_hand():
    n_params = llms.get("Llama-3.1-8B").n_params  # an input: the catalog's count
    kv_per_token = 2 * 32 * 8 * 128 * 2  # K and V x 32 layers x 8 KV heads x 128 x bf16 = 128 KiB
    for batch in (1, 32):
        by_hand = (2 * n_params + batch * 4096 * kv_per_token) / 3.35e12  # bytes over the H100's 3.35 TB/s
        assert serving.decode_step_s(
            "Llama-3.1-8B", device="H100 SXM", batch=batch, context_len=4096
        ) == pytest.approx(by_hand)
    room = (80e9 - RESERVE - 2 * n_params) // (4096 * kv_per_token)  # 80 GB less the reserve and the weights
    assert serving.max_batch("Llama-3.1-8B", device="H100 SXM", context_len=4096) == room


def test_batch_latency_is_the_estimates_latency_at_each_batch():
    shape = dict(device=hardware.get("H100 SXM"), prompt_len=500, output_len=200, efficiency=0.7)
    latency_s = serving.batch_latency("Llama-3.1-8B", **shape)
    for batch in (1, 2, 64):
        assert latency_s(batch) == serving.estimate("Llama-3.1-8B", batch=batch, **shape).latency_s
    assert latency_s(1) < latency_s(64)  # a larger batch reads more KV cache per step
