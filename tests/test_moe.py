"""Mixtures of experts in the calculators (issue 35, item 5) and the tiny MoE of lab_utils.models
(item 7): the experts a batch touches, expert parallelism's bytes, the model's counts."""

import pytest
import torch

from lab_utils import basics, comms, models


@pytest.mark.parametrize("n_experts, top_k", [(8, 2), (128, 8), (256, 8), (64, 1)])
@pytest.mark.parametrize("tokens", [1, 4, 32, 1000])
def test_experts_touched_is_the_uniform_routing_expectation(n_experts, top_k, tokens):
    expected = n_experts * (1 - (1 - top_k / n_experts) ** tokens)
    assert basics.experts_touched(n_experts, top_k, tokens) == pytest.approx(expected)
    assert top_k <= basics.experts_touched(n_experts, top_k, tokens) <= n_experts


def test_experts_touched_by_mixtral_at_batch_4_is_five_and_a_half():
    assert basics.experts_touched(8, 2, 4) == pytest.approx(5.46875)


def test_experts_touched_matches_a_simulated_uniform_router():
    generator = torch.Generator().manual_seed(0)
    n_experts, top_k, tokens, trials = 16, 2, 6, 4000
    picks = torch.rand(trials, tokens, n_experts, generator=generator).topk(top_k, dim=-1)[1]
    touched = torch.tensor([p.unique().numel() for p in picks.reshape(trials, -1)]).float().mean()
    assert float(touched) == pytest.approx(basics.experts_touched(n_experts, top_k, tokens), rel=0.02)


def test_a_skewed_router_touches_fewer_experts_and_keeps_k_per_token():
    uniform = basics.experts_touched(64, 4, 16)
    skewed = [basics.experts_touched(64, 4, 16, skew=s) for s in (0.5, 1.0, 2.0)]
    assert uniform > skewed[0] > skewed[1] > skewed[2] >= 4
    chances = basics._routing_probabilities(8, 2, 3.0)
    assert sum(chances) == pytest.approx(2) and max(chances) == 1.0
    assert basics.experts_touched(8, 2, 1, skew=1.5) == pytest.approx(2)  # one token: its k experts


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_experts=8, top_k=9, tokens=1), "top_k"),
        (dict(n_experts=0, top_k=1, tokens=1), "n_experts"),
        (dict(n_experts=8, top_k=2, tokens=-1), "tokens"),
        (dict(n_experts=8, top_k=2, tokens=1, skew=-1), "skew"),
    ],
)
def test_experts_touched_refuses_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        basics.experts_touched(**kwargs)


def test_all_to_all_sends_all_but_the_own_share():
    assert comms.all_to_all_bytes(800, 8) == 700
    assert comms.all_to_all_bytes(800, 1) == 0


# --------------------------------------------------------------------------- the tiny MoE


MOE_CONFIGS = [
    models.MoEConfig(),
    models.MoEConfig(
        vocab_size=50, seq_len=8, n_layers=1, hidden=16, n_heads=2, n_experts=4, top_k=1, n_shared=0
    ),
    models.MoEConfig(hidden=32, n_heads=4, n_experts=6, top_k=3, expert_hidden=48, n_shared=2),
]


@pytest.mark.parametrize("config", MOE_CONFIGS)
def test_tiny_moe_counts_its_parameters(config):
    model = models.TinyMoE(config)
    assert sum(p.numel() for p in model.parameters()) == config.n_params
    skipped = config.n_layers * (config.n_experts - config.top_k) * config.expert_params
    assert config.params_per_token == config.n_params - skipped


def test_tiny_moe_mlp_is_the_weighted_sum_of_the_chosen_experts():
    torch.manual_seed(0)
    config = MOE_CONFIGS[2]
    mlp = models.TinyMoE(config).blocks[0].mlp
    x = torch.randn(7, config.hidden)
    scores, chosen = mlp.router(x).topk(config.top_k, dim=-1)
    weights = torch.softmax(scores, dim=-1)
    expected = sum(shared(x) for shared in mlp.shared)
    expected = expected + torch.stack(
        [
            sum(weights[i, j] * mlp.experts[int(chosen[i, j])](x[i]) for j in range(config.top_k))
            for i in range(7)
        ]
    )
    torch.testing.assert_close(mlp(x), expected)
    assert mlp.experts_used(x) == chosen.unique().numel()


def test_tiny_moe_generates_with_its_kv_cache_as_without():
    config = models.MoEConfig(seq_len=16)
    model = models.TinyMoE(config).eval()
    tokens = models.random_tokens(config, 2)[:, :6]
    generated = model.generate(tokens, 4)
    with torch.no_grad():
        for step in range(4):
            assert torch.equal(model(generated[:, : 6 + step])[:, -1].argmax(-1), generated[:, 6 + step])


def test_tiny_moe_refuses_bad_shapes():
    with pytest.raises(ValueError, match="top_k"):
        models.MoEConfig(n_experts=2, top_k=3)
    with pytest.raises(ValueError, match="n_shared"):
        models.MoEConfig(n_shared=-1)
    with pytest.raises(TypeError, match="MoEConfig"):
        models.TinyMoE(models.GPTConfig())


# --------------------------------------------------------------------------- layers in the calculators

from lab_utils import assumptions, economics, hardware, llms, memory, serving, splits  # noqa: E402


def _kv_by_hand(config, context_len, bytes_per_value=2):
    """vLLM's layout written out per layer kind, from the config's own fields."""
    total = 0
    for layer in config.layers:
        a = layer.attention
        if a.kind == "mla":
            total += (a.kv_lora_rank + a.qk_rope_head_dim) * context_len
        elif a.kind == "sliding":
            total += a.n_kv_heads * (a.head_dim + a.v_head_dim) * min(a.window, context_len)
        else:
            total += a.n_kv_heads * (a.head_dim + a.v_head_dim) * context_len
    return total * bytes_per_value


@pytest.mark.parametrize(
    "name, kinds",
    [
        ("Llama-3.1-8B", {"full"}),
        ("Mistral-7B-v0.1", {"sliding"}),
        ("gpt-oss-20b", {"full", "sliding"}),
        ("Gemma-3-27B", {"full", "sliding"}),
        ("DeepSeek-V3", {"mla"}),
        ("Kimi K2", {"mla"}),
    ],
)
@pytest.mark.parametrize("context_len", [100, 4096, 32768])
def test_kv_bytes_follow_vllms_layout_per_layer_kind(name, kinds, context_len):
    config = llms.get(name)
    assert {layer.attention.kind for layer in config.layers} == kinds
    expected = _kv_by_hand(config, context_len)
    assert serving.kv_bytes_per_sequence(name, context_len=context_len) == expected
    job = memory.job_estimate(name, "inference", batch=3, seq_len=context_len)
    assert job.part("KV cache") == 3 * expected
    assert dict(job.assumptions)["kv_layout"] == memory.kv_layout(name)


def test_the_kv_layouts_figures():
    # DeepSeek-V3: 576 values per token and layer (512 latent + 64 rotary key), 61 layers, bf16
    assert serving.kv_bytes_per_sequence("DeepSeek-V3", context_len=1) == 61 * 576 * 2
    assert "MLA latent (512 + 64" in memory.kv_layout("DeepSeek-V3")
    # gpt-oss: every other layer keeps at most its 128-token window
    short, long = (serving.kv_bytes_per_sequence("gpt-oss-120b", context_len=n) for n in (128, 128_000))
    assert long / short == pytest.approx((18 * 128_000 + 18 * 128) / (36 * 128))
    assert "sliding window of 128 tokens" in memory.kv_layout("gpt-oss-120b")


@pytest.mark.parametrize("batch", [1, 4, 32])
@pytest.mark.parametrize("name", ["Mixtral-8x7B", "Qwen3-30B-A3B", "DeepSeek-V3"])
def test_the_moe_decode_bound_reads_the_experts_a_batch_touches(name, batch):
    config = llms.get(name)
    spec = hardware.get("H200 SXM")
    moe = [layer for layer in config.layers if layer.mlp.kind == "moe"]
    experts = sum(layer.routed_expert_params for layer in moe)
    touched = sum(
        layer.mlp.n_experts * (1 - (1 - layer.mlp.top_k / layer.mlp.n_experts) ** batch) * layer.expert_params
        for layer in moe
    )
    kv = batch * serving.kv_bytes_per_sequence(config, context_len=1024)
    weights = ((config.n_params - experts) + touched) * 2  # bf16
    expected_s = (weights + kv) / spec.bandwidth_bytes_per_s
    step_s = serving.decode_step_s(config, device=spec, batch=batch, context_len=1024, precision="bf16")
    assert step_s == pytest.approx(expected_s)  # these batches are bandwidth bound
    bound = economics.decode_tokens_per_s_bound(
        config,
        bytes_per_param=2,
        bandwidth_bytes_per_s=spec.bandwidth_bytes_per_s,
        batch=batch,
        context_len=1024,
    )
    assert bound == pytest.approx(batch / expected_s)
    if batch == 4 and name == "Mixtral-8x7B":  # 5.47 of 8 experts, not min(8, 4 x 2)
        assert touched / experts == pytest.approx(5.46875 / 8)


def test_the_design_docs_call_works_and_a_skewed_router_reads_less():
    cfg = llms.get("Qwen3-30B-A3B")
    uniform = serving.decode_step_s(cfg, device="H100 SXM", batch=4, context_len=4096, precision="bf16")
    skewed = serving.decode_step_s(
        cfg, device="H100 SXM", batch=4, context_len=4096, precision="bf16", routing_skew=1.0
    )
    assert skewed < uniform
    assert serving.routing(cfg).startswith("uniform") and serving.routing("Llama-3.1-8B") == ""


def test_the_checkpoint_is_the_default_precision_and_holds_the_published_fits():
    small, large = (memory.job_estimate(name, "inference") for name in ("gpt-oss-20b", "gpt-oss-120b"))
    assert dict(small.assumptions)["precision.inference"] == "checkpoint (mxfp4)"
    # OpenAI: gpt-oss-20b runs within 16 GB, gpt-oss-120b on one 80 GB GPU (model card, 2025-08)
    assert small.total_bytes < 16e9
    assert memory.fits(small.total_bytes, "T4", reserve_bytes=assumptions.value("cuda_context_low_bytes"))
    assert memory.fits(large.total_bytes, "H100 SXM") and not memory.fits(large.total_bytes, "L40S")
    # bf16 on request: 4x the experts' bytes
    assert memory.job_estimate("gpt-oss-120b", "inference", "bf16").total_bytes > 3 * large.total_bytes
    served = serving.estimate("gpt-oss-120b", device="H100 SXM", prompt_len=1000, output_len=200)
    assert served.precision == "checkpoint (mxfp4)" and "sliding window" in served.kv_layout
    fp8 = serving.resolve_precision(device="H100 SXM", model="DeepSeek-V3")
    assert (fp8.checkpoint, fp8.compute_dtype) == ("fp8-block", "fp8") and fp8.weight_bytes_per_param < 1.2


def test_a_full_fine_tune_of_a_mixture_holds_every_expert_and_counts_active_flops():
    job = memory.job_estimate("Qwen3-30B-A3B", "full", batch=1, seq_len=1024)
    assert job.part("optimizer states") == 12 * llms.get("Qwen3-30B-A3B").n_params
    fine = economics.fine_tune_estimate(
        "Qwen3-30B-A3B", 1e8, method="full", gpu="H100 SXM", attention_term="none"
    )
    assert fine.flops == pytest.approx(6 * llms.get("Qwen3-30B-A3B").params_per_token * 1e8)


def test_expert_parallelism_spreads_the_experts_and_sends_k_copies_per_moe_layer():
    config = llms.get("Qwen3-30B-A3B")
    experts = sum(layer.routed_expert_params for layer in config.layers)
    ep = splits.expert_parallel(config, 8, batch=2, seq_len=1024)
    rest = config.n_params - experts
    assert ep.state_bytes_per_rank == memory.training_state_bytes(rest + experts / 8).total_bytes
    dispatched = 48 * 8 * 2 * 1024 * config.hidden * 2  # MoE layers x k x tokens x hidden x bf16
    assert ep.all_to_all_bytes_per_step == pytest.approx(
        4 * 7 / 8 * dispatched
    )  # dispatch, combine, fwd, bwd
    plan = splits.cluster_plan(config, "H100 SXM", 8, 2)
    rows = {row.layout: row for row in plan.rows}
    assert rows["EP x16"].network_bytes_per_step > 0 and rows["EP x8 + DP x2"].nvlink_bytes_per_step > 0
    with pytest.raises(ValueError, match="experts"):
        splits.expert_parallel("Llama-3.1-8B", 8, batch=1, seq_len=8)


def test_llamacpp_beats_the_capped_formula_but_not_the_experts_touched_bound():
    from lab_utils import published

    config, spec = llms.get("Qwen3-30B-A3B"), hardware.get("RTX 4090")
    for tokens in (8, 16):
        row = published.compare(published.get(f"llamacpp-rtx4090-qwen3-30b-a3b-q4_0-ubatch{tokens}"))
        capped_s = (
            min(config.n_params, tokens * config.params_per_token) * 0.5625 / spec.bandwidth_bytes_per_s
        )
        assert tokens / capped_s < row.measurement.figure < row.course_value  # min(N, B x active) is beaten


def test_one_owner_for_attention_flops_and_the_decode_bound():
    # issue 36: prefill's attention and economics' attention term are one formula (sliding windows
    # included: Mistral-7B-v0.1 at 8k tokens), and the decode bound counts the KV cache as serving does
    from lab_utils import basics

    mistral, spec = llms.get("Mistral-7B-v0.1"), hardware.get("H100 SXM")
    per_token = economics.attention_flops_per_token(mistral, 8192)
    assert per_token == basics.attention_flops_per_token(mistral.layers, 8192)
    compute_s = serving.prefill_s(mistral, device=spec, prompt_len=8192, precision="bf16")
    expected_s = 8192 * (2 * mistral.params_per_token + per_token) / spec.peak_flops["bf16"]
    assert compute_s == pytest.approx(expected_s)
    step_s = serving.decode_step_s(mistral, device=spec, batch=16, context_len=8192, precision="bf16")
    bound = economics.decode_tokens_per_s_bound(
        mistral,
        bytes_per_param=2,
        bandwidth_bytes_per_s=spec.bandwidth_bytes_per_s,
        batch=16,
        context_len=8192,
        peak_flops=spec.peak_flops["bf16"],
    )
    assert bound == pytest.approx(16 / step_s)
