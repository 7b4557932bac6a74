"""lab_utils.replica: a serving replica simulated step by step, checked on cases small enough to
schedule on paper. Each case writes the schedule out (which step computes what) and prices each
step with serving.step, the one roofline formula, under the "bound" engine (efficiency 1, no
overheads), so the simulator's own arithmetic is what is tested."""

import math

import pytest

from lab_utils import assumptions, published, replica, serverless, serving

MODEL, DEVICE = "Llama-3.1-8B", "H100 SXM"
EXACT = dict(engine="bound", context_bucket=1, kv_block_size=1)


def step_s(decodes=None, chunks=()):
    return serving.step(MODEL, device=DEVICE, decode_contexts=decodes or {}, prefill_chunks=chunks).seconds


def test_two_requests_arriving_together_share_the_token_budget():
    """Prompts of 10 and 6 tokens, 3 tokens out each, a budget of 8 tokens a step:
    step 1 prefills A's first 8 tokens; step 2 A's last 2 (A's first token) and B's 6 (B's first
    token, B waited one step); steps 3 and 4 decode both (contexts 10 and 6, then 11 and 7)."""
    result = replica.simulate(
        MODEL,
        device=DEVICE,
        requests=[(0.0, 10, 3), (0.0, 6, 3)],
        max_num_batched_tokens=8,
        max_num_seqs=2,
        chunked_prefill=True,
        **EXACT,
    )
    t1 = step_s(chunks=[(8, 0)])
    t2 = step_s(chunks=[(2, 8), (6, 0)])
    t3 = step_s(decodes={10: 1, 6: 1})
    t4 = step_s(decodes={11: 1, 7: 1})
    a, b = result.requests
    assert result.steps == 4 and result.preemptions == 0
    assert a.ttft_s == pytest.approx(t1 + t2) and b.ttft_s == pytest.approx(t1 + t2)
    assert a.queue_s == 0.0 and b.queue_s == pytest.approx(t1)
    assert a.e2e_s == pytest.approx(t1 + t2 + t3 + t4) == b.e2e_s
    assert a.tpot_s == pytest.approx((t3 + t4) / 2)
    assert result.output_tokens_per_s == pytest.approx(6 / (t1 + t2 + t3 + t4))


def test_without_chunked_prefill_a_prompt_stops_the_decodes():
    """The same two requests, B arriving after A's first step: without chunking, step 1 prefills
    A whole; B's arrival makes step 2 a prefill step (A waits); then both decode."""
    t1 = step_s(chunks=[(10, 0)])
    result = replica.simulate(
        MODEL,
        device=DEVICE,
        requests=[(0.0, 10, 3), (t1 / 2, 6, 3)],
        max_num_batched_tokens=8,
        max_num_seqs=2,
        chunked_prefill=False,
        **EXACT,
    )
    t2 = step_s(chunks=[(6, 0)])
    a, b = result.requests
    assert a.ttft_s == pytest.approx(t1)
    assert b.ttft_s == pytest.approx(t1 + t2 - t1 / 2)
    assert a.e2e_s == pytest.approx(t1 + t2 + step_s({10: 1, 6: 1}) + step_s({11: 1, 7: 1}))


def test_a_full_cache_preempts_the_latest_request_which_recomputes():
    """A KV cache of 12 tokens, two prompts of 5 tokens, 4 out each. Step 1 prefills both (10
    tokens held, 2 free; one token each). Step 2: both decode (contexts 5; the cache is full).
    Step 3: A needs a 13th token's slot, so B (admitted last) is preempted, freeing 6; A decodes
    at context 6. Step 4: A decodes at 7 and finishes. Step 5: B recomputes its 5 + 2 tokens
    (and samples its third token). Step 6: B decodes at context 7 and finishes."""
    result = replica.simulate(
        MODEL,
        device=DEVICE,
        requests=[(0.0, 5, 4), (0.0, 5, 4)],
        max_num_batched_tokens=16,
        max_num_seqs=2,
        kv_cache_tokens=12,
        **EXACT,
    )
    t = [
        step_s(chunks=[(5, 0), (5, 0)]),
        step_s({5: 2}),
        step_s({6: 1}),
        step_s({7: 1}),
        step_s(chunks=[(7, 0)]),
        step_s({7: 1}),
    ]
    a, b = result.requests
    assert result.steps == 6 and result.preemptions == 1
    assert (a.preemptions, b.preemptions) == (0, 1)
    assert a.e2e_s == pytest.approx(sum(t[:4]))
    assert b.ttft_s == pytest.approx(t[0]) and b.e2e_s == pytest.approx(sum(t))
    assert b.tpot_s == pytest.approx(sum(t[1:]) / 3)


@pytest.mark.parametrize("acceptance", [0.0, 1.0])
def test_speculative_decoding_at_acceptance_0_and_1(acceptance):
    """k = 3 drafted tokens, a prompt of 8, 9 tokens out, n-gram drafts (no draft cost). Each
    verify step computes 4 tokens after the context. At a = 1 it keeps all 4: 2 verify steps
    (contexts 8 and 12) after the prefill's first token; at a = 0 it keeps 1: 8 steps (8 to 15)."""
    result = replica.simulate(
        MODEL,
        device=DEVICE,
        requests=[(0.0, 8, 9)],
        spec_tokens=3,
        spec_acceptance=acceptance,
        max_num_batched_tokens=8,
        max_num_seqs=2,
        **EXACT,
    )
    contexts = [8, 12] if acceptance == 1.0 else list(range(8, 16))
    decode = sum(step_s(chunks=[(4, c)]) for c in contexts)
    (request,) = result.requests
    assert result.steps == 1 + len(contexts)
    assert request.ttft_s == pytest.approx(step_s(chunks=[(8, 0)]))
    assert request.tpot_s == pytest.approx(decode / 8)


def test_a_draft_model_adds_its_k_steps():
    """A draft model costs k of its own decode steps per verify step (a = 0: 8 verify steps)."""
    plain = replica.simulate(
        MODEL, device=DEVICE, requests=[(0.0, 8, 9)], spec_tokens=3, spec_acceptance=0.0, **EXACT
    )
    drafted = replica.simulate(
        MODEL,
        device=DEVICE,
        requests=[(0.0, 8, 9)],
        spec_tokens=3,
        spec_acceptance=0.0,
        spec_draft_model="Llama-3.2-1B",
        **EXACT,
    )
    draft = sum(
        serving.step("Llama-3.2-1B", device=DEVICE, decode_contexts={c: 1}).seconds for c in range(8, 16)
    )
    assert drafted.requests[0].e2e_s - plain.requests[0].e2e_s == pytest.approx(3 * draft)


def test_tokens_per_verify_step():
    assert replica.tokens_per_verify_step(4, 0.8) == pytest.approx((1 - 0.8**5) / 0.2)
    with pytest.raises(ValueError, match="spec_acceptance"):
        replica.tokens_per_verify_step(4, 1.5)


def test_prefix_hits_skip_prefill():
    """Half of a 1,000-token prompt found in the cache, in whole 16-token blocks: 496 tokens
    shared; the prefill computes the other 504 after them."""
    result = replica.simulate(
        MODEL, device=DEVICE, requests=[(0.0, 1000, 2)], prefix_hit=0.5, engine="bound", context_bucket=1
    )
    assert result.requests[0].ttft_s == pytest.approx(step_s(chunks=[(504, 496)]))


def test_a_closed_loop_keeps_the_concurrency_in_flight():
    """Concurrency 2, four identical requests: two run together, then the next two."""
    result = replica.simulate(
        MODEL, device=DEVICE, requests=replica.closed_loop(4, 100, 10), concurrency=2, **EXACT
    )
    first, second, third, fourth = result.requests
    assert first.arrival_s == second.arrival_s == 0.0
    assert third.arrival_s == pytest.approx(first.e2e_s) and fourth.arrival_s == pytest.approx(second.e2e_s)
    assert third.e2e_s == pytest.approx(first.e2e_s)


def test_the_queue_grows_past_the_knee():
    """Poisson arrivals below and far above what one replica serves: p99 TTFT explodes past it."""
    light = [(t, 2000, 200) for t in serverless.poisson_arrivals(2, 30, seed=1)]
    heavy = [(t, 2000, 200) for t in serverless.poisson_arrivals(60, 30, seed=1)]
    low = replica.simulate(MODEL, device=DEVICE, requests=light)
    high = replica.simulate(MODEL, device=DEVICE, requests=heavy)
    assert high.ttft.p99 > 10 * low.ttft.p99
    assert high.goodput_requests_per_s < high.requests_per_s
    assert low.goodput_requests_per_s == low.requests_per_s


def test_levers_take_their_assumptions_and_are_checked():
    result = replica.simulate(MODEL, device=DEVICE, requests=[(0.0, 100, 10)])
    assert result.slo_ttft_s == assumptions.value("slo_ttft_s")
    assert dict(result.assumptions)["chunked_prefill"] is True and "max_num_seqs" in dict(result.assumptions)
    assert result.usd_per_million_tokens > 0 and math.isfinite(result.usd_per_million_tokens)
    with pytest.raises(ValueError, match="prefix_hit"):
        replica.simulate(MODEL, device=DEVICE, requests=[(0.0, 100, 10)], prefix_hit=2.0)
    with pytest.raises(ValueError, match="max_num_batched_tokens=8"):
        replica.simulate(MODEL, device=DEVICE, requests=[(0.0, 100, 10)], max_num_batched_tokens=8)
    with pytest.raises(ValueError, match="spec_acceptance"):
        replica.simulate(MODEL, device=DEVICE, requests=[(0.0, 100, 10)], spec_tokens=2)
    with pytest.raises(ValueError, match="more KV cache"):
        replica.simulate(MODEL, device=DEVICE, requests=[(0.0, 100, 10)], kv_cache_tokens=50, **EXACT)


def test_fp8_kv_doubles_the_cache():
    bf16 = replica.kv_capacity_tokens(MODEL, device=DEVICE)
    fp8 = replica.kv_capacity_tokens(MODEL, device=DEVICE, kv_bytes_per_value=1)
    assert fp8 == pytest.approx(2 * bf16, abs=2)


def test_the_step_is_decode_step_s_and_prefill_s():
    """serving.step's pure cases are the two older bounds (one formula)."""
    assert step_s({4096: 8}) == serving.decode_step_s(MODEL, device=DEVICE, batch=8, context_len=4096)
    assert step_s(chunks=[(512, 0)] * 3) == serving.prefill_s(MODEL, device=DEVICE, prompt_len=512, batch=3)


@pytest.mark.parametrize(
    "record",
    [m for m in published.measurements() if m.question.startswith("replica_")],
    ids=lambda m: m.name,
)
def test_the_bound_engine_never_beats_a_published_latency(record):
    """Each published latency under load, simulated with the roofline itself ("bound": every
    efficiency 1, no overhead): the measurement never beats it."""
    function = published.QUESTIONS[record.question][0]
    assert function(**{**dict(record.inputs), "engine": "bound"}) <= record.figure


def test_a_checkpoints_own_expert_bytes_size_the_cache_and_the_steps():
    """gpt-oss keeps its routed experts in MXFP4 and the rest in bf16: the simulator's KV cache
    is kv_capacity_tokens' for the checkpoint, and its steps read the experts in their bytes."""
    alone = replica.simulate("gpt-oss-20b", device="L4", requests=[(0.0, 100, 10)])
    assert alone.kv_capacity_tokens == replica.kv_capacity_tokens("gpt-oss-20b", device="L4") > 0
    as_bf16 = replica.simulate(
        "gpt-oss-20b", device="H100 SXM", requests=[(0.0, 100, 10)], weight_bytes_per_param=2.0
    )
    as_published = replica.simulate("gpt-oss-20b", device="H100 SXM", requests=[(0.0, 100, 10)])
    assert as_published.e2e.p50 < as_bf16.e2e.p50  # the experts read in 4.25 bits, not 16


def test_a_device_without_a_price_has_no_cost_per_token():
    result = replica.simulate("Llama-3.1-8B", device="A100 80GB PCIe", requests=[(0.0, 100, 10)])
    assert result.usd_per_hour is None and result.usd_per_million_tokens is None
