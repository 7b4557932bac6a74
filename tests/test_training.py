"""training and the LoRA layer of models: the tiny fine-tune really trains, LoRA merges to
W + scale·B·A, frozen weights get no gradients, and the FLOP count matches its formula."""

import copy
import functools

import pytest
import torch
from torch import nn

from lab_utils import models, training

CONFIG = models.GPTConfig()
SMALL = models.GPTConfig(vocab_size=256, seq_len=16, n_layers=1, hidden=32, n_heads=2)
TEXT = training.corpus("domain", 16_384)
HELD_OUT = training.corpus("domain", 4_096, seed=1)


def fresh_model(config=CONFIG, seed=0):
    torch.manual_seed(seed)
    return models.TinyGPT(config)


# --- the corpus -------------------------------------------------------------------------------


def test_corpus_is_reproducible_ascii_of_the_asked_length():
    text = training.corpus("general", 5_000, seed=3)
    assert len(text) == 5_000 and text.isascii()
    assert text == training.corpus("general", 5_000, seed=3)
    assert text != training.corpus("general", 5_000, seed=4)
    assert training.corpus("domain", 200).startswith(b"order ")


# --- the fine-tune ----------------------------------------------------------------------------


@functools.cache
def _pretrained_base(config):
    return training.fine_tune(
        fresh_model(config), training.corpus("general", 16_384), method="full", steps=40, batch=8, lr=3e-3
    ).model


def pretrained_model(config=SMALL):
    """A base model trained briefly on general text, as LoRA fine-tunes a pretrained model (trained
    once per test session; each caller gets its own copy)."""
    return copy.deepcopy(_pretrained_base(config))


# Full fine-tuning from scratch learns the byte statistics fast; LoRA's few adapter weights move
# a pretrained base less, so its bar is lower (measured: losses x0.60 full, x0.89 LoRA).
@pytest.mark.slow
@pytest.mark.parametrize(
    "method, lr, make_base, loss_ratio, eval_ratio",
    [
        ("full", 3e-3, fresh_model, 0.7, 0.8),
        ("lora", 1e-2, pretrained_model, 0.93, 0.95),
    ],
)
def test_loss_falls_on_a_fixed_seed(method, lr, make_base, loss_ratio, eval_ratio):
    result = training.fine_tune(
        make_base(SMALL), TEXT, method=method, steps=30, batch=8, lr=lr, eval_text=HELD_OUT
    )
    assert len(result.losses) == 30
    first, last = result.losses[0], sum(result.losses[-5:]) / 5
    assert last < loss_ratio * first, result.losses
    assert result.eval_loss_after < eval_ratio * result.eval_loss_before
    again = training.fine_tune(
        make_base(SMALL), TEXT, method=method, steps=30, batch=8, lr=lr, eval_text=HELD_OUT
    )
    assert again.losses == pytest.approx(result.losses, rel=1e-4)


def test_fine_tune_trains_a_copy_and_reports_its_run():
    model = fresh_model(SMALL)
    before = {name: p.clone() for name, p in model.state_dict().items()}
    result = training.fine_tune(model, TEXT, method="lora", steps=5, batch=4, rank=2, warmup_steps=2)
    assert all(torch.equal(before[name], p) for name, p in model.state_dict().items())
    assert not any(isinstance(m, models.LoRALinear) for m in model.modules())
    assert any(isinstance(m, models.LoRALinear) for m in result.model.modules())
    assert (result.steps, result.timed_steps, result.tokens_per_step) == (5, 3, 4 * SMALL.seq_len)
    assert result.total_params == SMALL.n_params + result.trainable_params
    # rank 2 adapters on qkv (32 -> 96), proj (32 -> 32), MLP (32 -> 128, 128 -> 32)
    assert result.trainable_params == 2 * ((32 + 96) + (32 + 32) + 2 * (32 + 128))
    assert result.tokens_per_s > 0 and result.timed_seconds > 0
    assert result.achieved_flops_per_s == pytest.approx(result.flops_per_token * result.tokens_per_s)


def test_max_seconds_stops_early():
    result = training.fine_tune(fresh_model(SMALL), TEXT, steps=50, batch=2, warmup_steps=1, max_seconds=1e-9)
    assert result.steps == 2 and len(result.losses) == 2 and result.timed_steps == 1


# --- counted FLOPs ----------------------------------------------------------------------------


def matmul_params(model):
    """Parameters that take part in a matrix product: the linears' weights and the tied output layer."""
    linears = sum(m.weight.numel() for m in model.modules() if isinstance(m, nn.Linear))
    return linears + model.token_embedding.weight.numel()


@pytest.mark.parametrize("config", [CONFIG, SMALL])
def test_counted_flops_are_6_n_d_plus_the_attention_term(config):
    """FlopCounterMode counts 6 FLOPs per matmul weight per token, plus the dense attention
    products (QKᵀ and AV, 4·s·h per layer and token forward, x3 with backward)."""
    model = fresh_model(config)
    window = torch.randint(256, (3, config.seq_len + 1))
    tokens = 3 * config.seq_len
    counted = training.count_step_flops(model, window)
    attention = 12 * config.n_layers * config.seq_len * config.hidden * tokens
    assert counted == 6 * matmul_params(model) * tokens + attention


def test_lora_skips_the_weight_gradients():
    model = fresh_model()
    window = torch.randint(256, (2, CONFIG.seq_len + 1))
    full = training.count_step_flops(model, window)
    lora = training.count_step_flops(models.apply_lora(fresh_model()), window)
    assert lora < 0.8 * full  # 6·N -> about 4·N on the weights; attention stays


# --- the LoRA layer ---------------------------------------------------------------------------


def test_merged_weight_is_w_plus_scaled_b_a():
    torch.manual_seed(0)
    layer = models.LoRALinear(nn.Linear(8, 6), rank=3, alpha=6.0)
    with torch.no_grad():
        layer.lora_b.normal_()
    expected = layer.base.weight + (6.0 / 3) * layer.lora_b @ layer.lora_a
    assert torch.allclose(layer.merged_weight(), expected)
    merged = layer.merge()
    assert torch.equal(merged.weight, layer.merged_weight()) and torch.equal(merged.bias, layer.base.bias)
    x = torch.randn(5, 8)
    assert torch.allclose(merged(x), layer(x), atol=1e-6)


def test_a_fresh_adapter_changes_nothing():
    base = nn.Linear(8, 6)
    x = torch.randn(4, 8)
    assert torch.equal(models.LoRALinear(base, rank=2)(x), base(x))


def test_merge_lora_keeps_what_the_model_computes():
    model = models.apply_lora(fresh_model(SMALL), rank=2)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, models.LoRALinear):
                module.lora_b.normal_(std=0.1)
    tokens = models.random_tokens(SMALL, batch=2)
    with torch.no_grad():
        before = model(tokens)
        after = models.merge_lora(model)(tokens)
    assert not any(isinstance(m, models.LoRALinear) for m in model.modules())
    assert torch.allclose(before, after, atol=1e-5)


def test_frozen_weights_get_no_gradients():
    model = models.apply_lora(fresh_model(SMALL), rank=2)
    window = torch.randint(256, (2, SMALL.seq_len + 1))
    training.count_step_flops(model, window)  # forward + backward
    for name, parameter in model.named_parameters():
        if "lora_" in name:
            assert parameter.requires_grad and parameter.grad is not None, name
        else:
            assert not parameter.requires_grad and parameter.grad is None, name
    adapted = [m for m in model.modules() if isinstance(m, models.LoRALinear)]
    assert len(adapted) == 4 * SMALL.n_layers  # qkv, proj and the two MLP linears


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_fine_tune_on_the_gpu():
    result = training.fine_tune(fresh_model(SMALL), TEXT, method="lora", steps=10, batch=4, device="cuda")
    assert result.device.startswith("cuda") and result.losses[-1] < result.losses[0]


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: training.corpus("poetry"), ValueError, "kind"),
        (lambda: training.corpus("domain", n_bytes=1), ValueError, "n_bytes"),
        (lambda: training.fine_tune(nn.Linear(2, 2), TEXT), TypeError, "model"),
        (lambda: training.fine_tune(fresh_model(SMALL), TEXT, method="dpo"), ValueError, "method"),
        (lambda: training.fine_tune(fresh_model(SMALL), TEXT, steps=0), ValueError, "steps"),
        (lambda: training.fine_tune(fresh_model(SMALL), TEXT, steps="10"), TypeError, "steps must be an int"),
        (
            lambda: training.evaluate_loss(fresh_model(SMALL), TEXT, batch=2.5),
            TypeError,
            "batch must be an int",
        ),
        (
            lambda: training.fine_tune(fresh_model(SMALL), TEXT, steps=2, warmup_steps=2),
            ValueError,
            "warmup_steps",
        ),
        (lambda: training.fine_tune(fresh_model(SMALL), TEXT, lr=float("nan")), ValueError, "lr"),
        (lambda: training.fine_tune(fresh_model(SMALL), TEXT, max_seconds=-1), ValueError, "max_seconds"),
        (lambda: training.fine_tune(fresh_model(SMALL), "text"), TypeError, "text"),
        (lambda: training.fine_tune(fresh_model(SMALL), b"short"), ValueError, "text"),
        (lambda: models.LoRALinear(nn.Linear(4, 4), rank=5), ValueError, "rank"),
        (lambda: models.LoRALinear(nn.Linear(4, 4), alpha=0), ValueError, "alpha"),
        (lambda: models.LoRALinear(nn.Conv1d(4, 4, 1)), TypeError, "base"),
        (lambda: models.apply_lora(models.apply_lora(fresh_model(SMALL))), ValueError, "already"),
        (lambda: models.apply_lora(nn.Linear(2, 2)), TypeError, "model"),
    ],
)
def test_bad_input_is_refused(call, error, match):
    with pytest.raises(error, match=match):
        call()
