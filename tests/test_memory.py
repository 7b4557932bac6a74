"""memory: the ZeRO, Korthikanti and KV-cache formulas, a measured training step, the budget; widgets."""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn
from torch.utils.checkpoint import checkpoint

from lab_utils import cli, hardware, llms, memory, memory_measure, models, widgets
from lab_utils.units import format_bytes

CONFIGS = [  # (config, batch): three shapes of the tiny GPT
    (models.GPTConfig(), 8),
    (models.GPTConfig(vocab_size=100, seq_len=16, n_layers=1, hidden=32, n_heads=2), 4),
    (models.GPTConfig(vocab_size=256, seq_len=128, n_layers=4, hidden=128, n_heads=8), 2),
]
SMALL = models.GPTConfig(vocab_size=64, seq_len=32, n_layers=2, hidden=32, n_heads=4)


def measured(config, batch, dtype=torch.float32, **kwargs):
    torch.manual_seed(0)
    model = models.TinyGPT(config).to(dtype)
    return memory_measure.measure_training_step(model, models.random_tokens(config, batch), **kwargs)


# --- formulas --------------------------------------------------------------------------------


@pytest.mark.parametrize("stage, gigabytes", [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_paper_figure_1(stage, gigabytes):
    """Rajbhandari et al., Fig. 1: Ψ = 7.5B, N_d = 64, mixed-precision Adam (K = 12)."""
    state = memory.training_state_bytes(7.5e9, zero_stage=stage, data_parallel=64)
    assert round(state.total_bytes / 1e9, 1) == gigabytes


def test_mixed_precision_adam_is_16_bytes_per_parameter_and_fp32_accumulation_adds_4():
    state = memory.training_state_bytes(1e9)
    assert (state.params_bytes, state.grads_bytes, state.optimizer_states_bytes) == (2e9, 2e9, 12e9)
    assert memory.training_state_bytes(1e9, fp32_grad_accum=True).total_bytes == 20e9
    assert memory.training_state_bytes(1e9, precision="fp32").total_bytes == 16e9  # 4 + 4 + 8
    assert memory.training_state_bytes(1e9, precision="fp32", optimizer="sgd").total_bytes == 8e9


@given(n_params=st.integers(1, 10**12), data_parallel=st.integers(2, 4096))
def test_each_zero_stage_saves_memory_and_one_rank_saves_nothing(n_params, data_parallel):
    totals = [
        memory.training_state_bytes(n_params, zero_stage=s, data_parallel=data_parallel).total_bytes
        for s in range(4)
    ]
    assert totals == sorted(totals, reverse=True) and totals[0] > totals[3]
    assert math.isclose(totals[3] * data_parallel, totals[0])
    single = {memory.training_state_bytes(n_params, zero_stage=s).total_bytes for s in range(4)}
    assert single == {16 * n_params}


def test_llama_3_1_8b_kv_cache_is_128_kib_per_token_in_bf16():
    llama = llms.get("llama-3.1-8b")
    per_token = memory.kv_cache_bytes(
        n_layers=llama.n_layers, n_kv_heads=llama.n_kv_heads, head_dim=llama.head_dim, seq_len=1
    )
    assert per_token == 128 * 1024
    assert (
        memory.kv_cache_bytes(n_layers=32, n_kv_heads=8, head_dim=128, seq_len=4096, batch=2)
        == 2 * 4096 * per_token
    )


def test_korthikanti_activation_formula():
    s, b, h, a, layers = 2048, 1, 4096, 32, 2
    shape = dict(n_layers=layers, hidden=h, n_heads=a, seq_len=s, batch=b)
    assert memory.activation_bytes(**shape) == layers * s * b * h * (34 + 5 * a * s / h)
    assert memory.activation_bytes(**shape, recompute="selective") == layers * 34 * s * b * h
    assert memory.activation_bytes(**shape, recompute="full") == layers * 2 * s * b * h


def test_tiny_gpt_estimate_at_two_bytes_is_korthikanti_without_dropout():
    config, batch = CONFIGS[2]
    s, h, a = config.seq_len, config.hidden, config.n_heads
    korthikanti = memory.activation_bytes(
        n_layers=config.n_layers, hidden=h, n_heads=a, seq_len=s, batch=batch
    )
    dropout = config.n_layers * (2 * s * batch * h + 3 * a * s * s * batch)  # masks and copy
    final_norm = 2 * 2 * s * batch * h
    assert (
        memory.tiny_gpt_activation_bytes(config, batch, bytes_per_value=2)
        == korthikanti - dropout + final_norm
    )


def test_weights_lora_and_job_estimates():
    llama = llms.get("Llama-3.1-8B")
    assert memory.weight_bytes(llama.n_params, "bf16") == 2 * 8_030_261_248
    # q, o: 4096 x 4096; k, v: 4096 x 1024; rank 16 in 32 layers
    assert memory.lora_params(llama, rank=16, targets="attention") == 32 * 16 * (2 * 8192 + 2 * 5120)
    inference = memory.job_estimate(llama, "inference", "bf16", batch=1, seq_len=8192)
    assert [label for label, _ in inference.parts] == ["weights", "KV cache"]
    assert inference.part("KV cache") == 8192 * 128 * 1024
    full = memory.job_estimate(llama, "full", "mixed", batch=1, seq_len=2048, recompute="full")
    # the saved log-probabilities (4 bytes per logit) counted once more, in the Hugging Face loss's 12
    assert full.total_bytes == (
        16 * llama.n_params
        + memory.llm_activation_bytes(llama, seq_len=2048, recompute="full")
        + 8 * 2048 * llama.vocab_size
    )
    kimi = memory.job_estimate("Kimi K2", "inference", "int4")
    assert kimi.part("weights") == 0.5 * llms.get("Kimi K2").n_params


def test_qlora_keeps_embeddings_and_head_in_bf16_as_bitsandbytes_does():
    # per block: q and o 4096 x 4096, k and v 4096 x 1024, gate, up, down 4096 x 14336
    linears = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336)
    assert linears == 6_979_321_856
    qlora = memory.job_estimate(
        "Llama-3.1-8B", "qlora", batch=1, seq_len=2048, lora_rank=16, lora_targets="attention"
    )
    assert qlora.precision == "int4"  # the method's, from the assumptions
    assert qlora.part("weights (NF4: block linears)") == linears / 2
    assert qlora.part("weights (bf16: embeddings, head, norms)") == 2 * (8_030_261_248 - linears)
    assert qlora.part("quantisation constants") == pytest.approx(linears * 0.127 / 8)
    adapters = 32 * 16 * (2 * 8192 + 2 * 5120)
    assert qlora.part("adapters") + qlora.part("gradients") + qlora.part("optimizer states") == 16 * adapters


def test_both_mixed_precision_layouts_hold_16_bytes_of_state_and_autocast_keeps_bf16_copies():
    megatron = memory.job_estimate("gpt2", "full", "mixed", seq_len=128)
    autocast = memory.job_estimate("gpt2", "full", "autocast", seq_len=128)
    n = 124_439_808
    assert (megatron.part("weights"), megatron.part("gradients"), megatron.part("optimizer states")) == (
        2 * n,
        2 * n,
        12 * n,
    )
    assert (autocast.part("weights"), autocast.part("gradients"), autocast.part("optimizer states")) == (
        4 * n,
        4 * n,
        8 * n,
    )
    assert autocast.part("bf16 weight copies (autocast)") == 2 * n
    assert autocast.total_bytes - megatron.total_bytes == 2 * n


def test_llama_3_1_8b_activations_worked_by_hand():
    # Per token and block, bf16 with SDPA, in bytes: two RMSNorms (fp32 input 4h, normalised 2h,
    # 1/rms 4), the inputs of q/k/v, o_proj and gate/up (3 x 2h), rotated q and k, v (2 x
    # (4096 + 2 x 1024)), one fp32 log-sum-exp per head (4 x 32), SwiGLU (4 x 2 x 14336).
    per_token = 2 * (6 * 4096 + 4) + 3 * 2 * 4096 + 2 * (4096 + 2048) + 4 * 32 + 8 * 14336
    assert per_token == 200_840
    tokens = 4096
    none = memory.llm_activation_bytes("Llama-3.1-8B", seq_len=tokens)
    full = memory.llm_activation_bytes("Llama-3.1-8B", seq_len=tokens, recompute="full")
    # full recompute keeps each block's bf16 input (2h) and one block live during its backward
    assert none - full == 31 * per_token * tokens - 32 * 2 * 4096 * tokens
    # eager: q, and k and v repeated to 32 heads (3 x 2 x 4096) instead of 2 x (4096 + 2048), no
    # log-sum-exp, and the softmax of 32 heads x 4096 x 4096 in fp32 plus its bf16 cast
    eager = memory.llm_activation_bytes("Llama-3.1-8B", seq_len=tokens, attention="eager")
    assert eager - none == 32 * (tokens * (6 * 4096 - 2 * 6144 - 4 * 32) + 6 * 32 * tokens * tokens)
    # the logits' fp32 log-softmax grows with the vocabulary: 4 bytes per token and entry
    assert memory.llm_activation_bytes("Llama-3.1-8B", seq_len=tokens) - memory.llm_activation_bytes(
        "Mistral-7B-v0.1", seq_len=tokens
    ) == 4 * tokens * (128256 - 32000)


def test_selective_recompute_drops_only_the_eager_scores():
    eager = memory.llm_activation_bytes("gpt2", seq_len=1024, attention="eager", recompute="selective")
    assert eager == memory.llm_activation_bytes("gpt2", seq_len=1024, attention="sdpa")
    assert memory.llm_activation_bytes(
        "gpt2", seq_len=1024, recompute="selective"
    ) == memory.llm_activation_bytes("gpt2", seq_len=1024)


def test_fits_and_gpus_needed_use_the_catalog_and_reserve_the_cuda_context():
    h100 = hardware.get("H100 SXM")
    reserve = memory.CUDA_CONTEXT_BYTES[1]
    assert memory.fits(h100.memory_bytes - reserve, h100)
    assert not memory.fits(h100.memory_bytes - reserve + 1, "H100 SXM")
    assert memory.fits(h100.memory_bytes, h100, reserve_bytes=0)
    seventy_b = memory.job_estimate("Llama-3.1-70B", "inference", "bf16", seq_len=1).total_bytes
    assert memory.gpus_needed(seventy_b, "H100 SXM") == 2
    assert memory.gpus_needed(1, "T4") == 1


def test_accelerate_reports_the_largest_part_not_the_sum():
    n = 8e9
    assert memory.accelerate_training_bytes(n, "float16") == 8 * n
    assert memory.accelerate_training_bytes(n, "float32") == 16 * n
    assert memory.accelerate_training_bytes(n) == memory.training_state_bytes(n).total_bytes / 2


SHAPELESS = llms.LLMConfig(
    name="shapeless", aliases=(), n_layers=2, hidden=8, n_params=1000, source="test", source_date="2026"
)  # a count without layers: nothing to adapt or to keep for backward


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: memory.training_state_bytes(1e9, precision="fp8"), ValueError, "precision='fp8'"),
        (lambda: memory.training_state_bytes(1e9, optimizer="lion"), ValueError, "optimizer='lion'"),
        (lambda: memory.training_state_bytes(1e9, zero_stage=4), ValueError, "zero_stage=4"),
        (lambda: memory.training_state_bytes(1e9, data_parallel=0), ValueError, "data_parallel=0"),
        (lambda: memory.training_state_bytes(-1), ValueError, "n_params=-1"),
        (lambda: memory.training_state_bytes("7B"), TypeError, "n_params"),
        (
            lambda: memory.activation_bytes(n_layers=1.5, hidden=8, n_heads=2, seq_len=4, batch=1),
            TypeError,
            "n_layers",
        ),
        (
            lambda: memory.activation_bytes(
                n_layers=1, hidden=8, n_heads=2, seq_len=4, batch=1, recompute="some"
            ),
            ValueError,
            "recompute='some'",
        ),
        (
            lambda: memory.kv_cache_bytes(n_layers=1, n_kv_heads=0, head_dim=8, seq_len=4),
            ValueError,
            "n_kv_heads=0",
        ),
        (lambda: memory.job_estimate("Llama-3.1-8B", "full", "int4"), ValueError, "precision='int4'"),
        (lambda: memory.job_estimate("Llama-3.1-8B", "pretrain"), ValueError, "method='pretrain'"),
        (lambda: memory.lora_params(SHAPELESS), ValueError, "shapeless"),
        (lambda: memory.lora_params("gpt2", targets="mlp"), ValueError, "targets='mlp'"),
        (
            lambda: memory.llm_activation_bytes("gpt2", seq_len=8, attention="flash"),
            ValueError,
            "attention='flash'",
        ),
        (
            lambda: memory.llm_activation_bytes("gpt2", seq_len=8, bytes_per_value=3),
            ValueError,
            "bytes_per_value=3",
        ),
        (lambda: memory.llm_activation_bytes("gpt2", seq_len=0), ValueError, "seq_len=0"),
        (lambda: memory.llm_activation_bytes(SHAPELESS, seq_len=8), ValueError, "shapeless"),
        (lambda: memory.job_estimate("gpt2", "lora", attention="flash"), ValueError, "attention='flash'"),
        (lambda: memory.fits(1e9, "EPYC 9684X"), ValueError, "gpu="),
        (lambda: memory.fits(1e9, "T4", reserve_bytes=-1), ValueError, "reserve_bytes=-1"),
        (lambda: memory.tiny_gpt_activation_bytes(object(), 1), TypeError, "config"),
        (lambda: memory_measure.measure_training_step("model", torch.zeros(1)), TypeError, "model"),
        (lambda: memory_measure.measure_training_step(nn.Linear(2, 2), [torch.zeros(2)]), TypeError, "batch"),
    ],
)
def test_bad_arguments_name_the_parameter(call, error, words):
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        call()


# --- a measured step -------------------------------------------------------------------------


@pytest.mark.parametrize("config, batch", CONFIGS)
def test_measured_state_equals_the_formula_and_activations_the_estimate(config, batch):
    step = measured(config, batch)
    formula = memory.training_state_bytes(config.n_params, precision="fp32", optimizer="adamw")
    assert (step.params_bytes, step.grads_bytes, step.optimizer_states_bytes) == (
        formula.params_bytes,
        formula.grads_bytes,
        formula.optimizer_states_bytes,
    )
    assert step.optimizer_scalars_bytes == 4 * len(list(models.TinyGPT(config).parameters()))  # step counts
    estimate = memory.tiny_gpt_activation_bytes(config, batch)
    assert step.activations_bytes == pytest.approx(estimate, rel=0.15)
    assert step.activations_bytes >= estimate  # the estimate leaves out only small tensors
    assert (
        step.params_bytes + step.activations_bytes
        <= step.peak_bytes
        <= step.params_bytes
        + step.grads_bytes
        + step.optimizer_states_bytes
        + step.activations_bytes
        + 4 * batch * config.seq_len * config.vocab_size
    )
    assert step.peak_method == "tracked tensor lifetimes" and step.device == "cpu"


def test_bf16_training_state_and_activations_follow_the_dtype():
    config, batch = CONFIGS[0]
    step = measured(config, batch, dtype=torch.bfloat16)
    formula = memory.training_state_bytes(config.n_params, precision="bf16")
    assert (step.params_bytes, step.grads_bytes, step.optimizer_states_bytes) == (
        formula.params_bytes,
        formula.grads_bytes,
        formula.optimizer_states_bytes,
    )
    estimate = memory.tiny_gpt_activation_bytes(config, batch, bytes_per_value=2)
    assert step.activations_bytes == pytest.approx(estimate, rel=0.15)


@pytest.mark.parametrize("momentum, optimizer", [(0.0, "sgd"), (0.9, "sgd_momentum")])
def test_sgd_state_matches_the_formula(momentum, optimizer):
    torch.manual_seed(0)
    model = models.TinyGPT(SMALL)
    sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=momentum)
    step = memory_measure.measure_training_step(model, models.random_tokens(SMALL, 2), optimizer=sgd)
    formula = memory.training_state_bytes(SMALL.n_params, precision="fp32", optimizer=optimizer)
    assert step.optimizer_states_bytes == formula.optimizer_states_bytes


def test_optimizer_state_from_the_first_step_raises_the_second_steps_peak():
    torch.manual_seed(0)
    model = models.TinyGPT(SMALL)
    adamw = torch.optim.AdamW(model.parameters())
    tokens = models.random_tokens(SMALL, 4)
    first = memory_measure.measure_training_step(model, tokens, optimizer=adamw)
    second = memory_measure.measure_training_step(model, tokens, optimizer=adamw)
    assert (
        second.peak_bytes - first.peak_bytes == first.optimizer_states_bytes + first.optimizer_scalars_bytes
    )


class Checkpointed(nn.Module):
    def __init__(self, block):
        super().__init__()
        self.block = block

    def forward(self, x):
        return checkpoint(self.block, x, use_reentrant=False)


def test_full_recomputation_keeps_only_each_block_input():
    config, batch = CONFIGS[2]
    torch.manual_seed(0)
    model = models.TinyGPT(config)
    tokens = models.random_tokens(config, batch)
    plain = memory_measure.measure_training_step(model, tokens)
    model.blocks = nn.ModuleList(Checkpointed(block) for block in model.blocks)
    recomputed = memory_measure.measure_training_step(model, tokens)
    # Korthikanti, full recomputation: the layer input, 2·s·b·h bytes per layer in 16 bit,
    # i.e. s·b·h values; plus the final LayerNorm's input and output (2·s·b·h values).
    korthikanti_values = (
        memory.activation_bytes(
            n_layers=config.n_layers,
            hidden=config.hidden,
            n_heads=config.n_heads,
            seq_len=config.seq_len,
            batch=batch,
            recompute="full",
        )
        / 2
    )
    expected = 4 * (korthikanti_values + 2 * config.seq_len * batch * config.hidden)
    assert recomputed.activations_bytes == pytest.approx(expected, rel=0.15)
    assert recomputed.peak_bytes < plain.peak_bytes


def test_peak_agrees_with_torch_memtracker():
    mem_tracker = pytest.importorskip("torch.distributed._tools.mem_tracker")
    config, batch = CONFIGS[2]
    ours = measured(config, batch)
    torch.manual_seed(0)
    model = models.TinyGPT(config)
    adamw = torch.optim.AdamW(model.parameters())
    tracker = mem_tracker.MemTracker()
    tracker.track_external(model, adamw)
    with tracker:
        model(models.random_tokens(config, batch)).sum().backward()
        adamw.step()
    theirs = tracker.get_tracker_snapshot("peak")[torch.device("cpu")]["Total"]
    assert ours.peak_bytes == pytest.approx(theirs, rel=0.05)


def test_meta_device_measures_what_the_cpu_measures_without_allocating():
    config, batch = CONFIGS[0]
    on_cpu = measured(config, batch)
    torch.manual_seed(0)
    model = models.TinyGPT(config).to("meta")
    on_meta = memory_measure.measure_training_step(model, models.random_tokens(config, batch).to("meta"))
    for field in ("params_bytes", "grads_bytes", "optimizer_states_bytes", "activations_bytes", "peak_bytes"):
        assert getattr(on_meta, field) == getattr(on_cpu, field), field
    assert on_meta.device == "meta"


def test_tuple_batch_and_custom_loss():
    model = nn.Bilinear(8, 8, 4)
    batch = (torch.randn(16, 8), torch.randn(16, 8))
    step = memory_measure.measure_training_step(model, batch, loss_fn=lambda out: (out**2).mean())
    assert step.params_bytes == 4 * (8 * 8 * 4 + 4)
    assert step.activations_bytes > 0  # pow saves the output of the bilinear layer


def test_budget_stops_a_step_that_outgrows_it_and_the_next_step_still_runs():
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    limit = 4 * 2**20
    with pytest.raises(memory_measure.BudgetExceeded) as caught:
        with memory_measure.budget(limit, device="cpu"):
            model = models.TinyGPT(CONFIGS[2][0])
            memory_measure.measure_training_step(model, models.random_tokens(CONFIGS[2][0], 8))
    assert caught.value.budget_bytes == limit and caught.value.live_bytes > limit
    assert isinstance(caught.value, MemoryError)
    assert _get_current_dispatch_mode() is None  # the tracker is gone
    with memory_measure.budget(64 * 2**20, device="cpu"):
        model = models.TinyGPT(SMALL)
        step = memory_measure.measure_training_step(model, models.random_tokens(SMALL, 2))
    assert step.peak_bytes < 64 * 2**20


def test_budget_refuses_a_bad_limit():
    with pytest.raises(ValueError, match="limit_bytes=0"):
        with memory_measure.budget(0, device="cpu"):
            pass


# --- the calculator widget -------------------------------------------------------------------


def test_static_calculator_draws_the_estimate_against_every_gpu():
    fig = widgets.memory_calculator("Llama-3.1-8B", "lora", "bf16", batch=2, seq_len=1024, static=True)
    ax = fig.axes[0]
    estimate = memory.job_estimate("Llama-3.1-8B", "lora", "bf16", batch=2, seq_len=1024)
    assert "Llama-3.1-8B" in ax.get_title()
    labels = [tick.get_text() for tick in ax.get_yticklabels()]
    assert labels[1:] == [s.name for s in sorted(hardware.catalog("gpu"), key=lambda s: s.memory_bytes)]
    widths = sorted(patch.get_width() for patch in ax.patches[: len(estimate.parts)])
    assert widths == pytest.approx(sorted(value / 1e9 for _, value in estimate.parts))
    assert ax.get_xlabel().endswith("bytes)") and ax.get_ylabel().endswith(")")


def test_live_calculator_offers_only_the_precisions_a_method_allows():
    panel = widgets.memory_calculator()
    controls = panel.controls
    controls["method"].value = "qlora"
    assert controls["precision"].options == ("int4",) and controls["precision"].value == "int4"
    controls["method"].value = "full"
    assert controls["precision"].options == memory.TRAINING_PRECISIONS
    with pytest.raises(ValueError, match="precision='int4'"):
        widgets.memory_calculator(method="full", precision="int4")


def test_the_command_line_gives_the_estimate_with_its_attention_and_layout(capsys):
    assert (
        cli.main(
            [
                "memory",
                "--model",
                "llama-3.1-8b",
                "--method",
                "lora",
                "--seq-len",
                "4096",
                "--attention",
                "eager",
                "--recompute",
                "none",
                "--lora-targets",
                "attention",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    estimate = memory.job_estimate(
        "Llama-3.1-8B", "lora", seq_len=4096, attention="eager", recompute="none", lora_targets="attention"
    )
    total_line = next(line for line in printed.splitlines() if line.startswith("total"))
    assert total_line.split()[1:] == format_bytes(estimate.total_bytes, binary=False).split()
    assert "none recompute, eager attention" in printed
    assert cli.main(["memory", "--model", "llama-3.1-8b", "--method", "qlora"]) == 0
    printed = capsys.readouterr().out
    assert "weights (NF4: block linears)" in printed and "nf4_constant_bits_per_weight = 0.127" in printed


# --- the loss at its peak, and the longest sequence that fits (issue 25, item 3) ----------------

LLAMA8_TOKENS_V = 4096 * 128_256  # tokens x vocabulary of Llama-3.1-8B at 4,096 tokens


def test_loss_bytes_worked_by_hand_for_llama_8b():
    # hf: 12 bytes per logit; chunked (8 chunks, bf16): 2 + 4/8 + 4 = 6.5;
    # fused: the head input's gradient, 2 x 4,096 x 4,096, and one chunk of logits: ceil(128,256 /
    # 4,096) = 32, 4,096 / 32 = 128 tokens, 2 x 128 x 128,256 bytes
    assert memory.loss_bytes("llama-3.1-8b", seq_len=4096, loss_impl="hf") == 12 * LLAMA8_TOKENS_V
    assert (
        memory.loss_bytes("llama-3.1-8b", seq_len=4096, loss_impl="chunked", loss_chunks=8)
        == 6.5 * LLAMA8_TOKENS_V
    )
    assert (
        memory.loss_bytes("llama-3.1-8b", seq_len=4096, loss_impl="fused")
        == 2 * 4096 * 4096 + 2 * 128 * 128_256
    )
    # in fp32 the chunked path has no upcast: the forward holds 4 + 4 bytes per logit
    assert (
        memory.loss_bytes("llama-3.1-8b", seq_len=4096, loss_impl="chunked", loss_chunks=8, bytes_per_value=4)
        == 8 * LLAMA8_TOKENS_V
    )


def test_job_estimate_counts_the_loss_at_its_peak_apart_from_the_activations():
    for impl in memory.LOSS_IMPLS:
        job = memory.job_estimate("llama-3.1-8b", method="qlora", seq_len=4096, loss_impl=impl)
        assert job.loss_impl == impl and ("loss_impl", impl) not in job.assumptions
        assert job.part(f"loss at its peak ({impl})") == memory.loss_bytes(
            "llama-3.1-8b", seq_len=4096, loss_impl=impl
        )
        saved = memory.llm_activation_bytes("llama-3.1-8b", seq_len=4096, recompute="full")
        assert (
            job.part("activations") == saved - 4 * LLAMA8_TOKENS_V
        )  # the log-probabilities move to the loss
    default = memory.job_estimate("llama-3.1-8b", method="lora")
    assert default.loss_impl == "hf" == dict(default.assumptions)["loss_impl"]
    assert memory.job_estimate("llama-3.1-8b").loss_impl is None  # inference has no loss
    chunked = memory.job_estimate("llama-3.1-8b", method="lora", loss_impl="chunked")
    assert dict(chunked.assumptions)["loss_chunks"] == 8
    with pytest.raises(ValueError, match="loss_impl"):
        memory.job_estimate("llama-3.1-8b", method="lora", loss_impl="liger")


def test_the_hf_loss_adds_8_bytes_per_logit_to_the_old_count():
    # the course used to count only the saved fp32 log-softmax (4 bytes per logit): the
    # Hugging Face path holds 12 at its peak, 8 more (2.1 GB -> 6.3 GB for Llama-3.1-8B)
    hf = memory.job_estimate("llama-3.1-8b", method="qlora", seq_len=4096, loss_impl="hf")
    fused = memory.job_estimate("llama-3.1-8b", method="qlora", seq_len=4096, loss_impl="fused")
    old = hf.total_bytes - hf.part("loss at its peak (hf)") + 4 * LLAMA8_TOKENS_V
    assert hf.total_bytes - old == 8 * LLAMA8_TOKENS_V
    assert fused.total_bytes < old < hf.total_bytes


def test_longest_seq_len_is_the_last_length_that_fits():
    fit = memory.longest_seq_len("llama-3.1-8b", "RTX 4090", method="qlora")
    assert fit.limited_by == "memory" and fit.gpu == "RTX 4090"
    at = memory.job_estimate("llama-3.1-8b", method="qlora", seq_len=fit.seq_len)
    beyond = memory.job_estimate("llama-3.1-8b", method="qlora", seq_len=fit.seq_len + 1)
    assert memory.fits(at.total_bytes, "RTX 4090") and not memory.fits(beyond.total_bytes, "RTX 4090")
    assert fit.estimate == at
    longer = {
        impl: memory.longest_seq_len("llama-3.1-8b", "RTX 4090", method="qlora", loss_impl=impl).seq_len
        for impl in memory.LOSS_IMPLS
    }
    assert longer["hf"] < longer["chunked"] < longer["fused"]


def test_longest_seq_len_stops_at_the_context_window_and_at_zero():
    gpt2 = memory.longest_seq_len("gpt2", "H100 SXM", method="full")
    assert (gpt2.seq_len, gpt2.limited_by) == (llms.get("gpt2").max_positions, "context window")
    none = memory.longest_seq_len("llama-3.1-70b", "T4", method="full")
    assert (none.seq_len, none.limited_by, none.estimate) == (0, "memory", None)
    with pytest.raises(TypeError, match="seq_len"):
        memory.longest_seq_len("gpt2", "T4", seq_len=10)
    with pytest.raises(ValueError, match="gpu"):
        memory.longest_seq_len("gpt2", "Xeon 8480+")
