"""models: the tiny GPT's shape, parameter count and input checks; the MLP."""

import pytest
import torch

from lab_utils import models

CONFIGS = [
    models.GPTConfig(),
    models.GPTConfig(vocab_size=100, seq_len=16, n_layers=1, hidden=32, n_heads=2),
    models.GPTConfig(vocab_size=256, seq_len=128, n_layers=4, hidden=128, n_heads=8),
]


@pytest.mark.parametrize("config", CONFIGS)
def test_parameter_count_matches_the_formula(config):
    model = models.TinyGPT(config)
    assert sum(p.numel() for p in model.parameters()) == config.n_params


@pytest.mark.parametrize("config", CONFIGS)
def test_forward_gives_logits_per_token(config):
    tokens = models.random_tokens(config, batch=3)
    logits = models.TinyGPT(config)(tokens)
    assert logits.shape == (3, config.seq_len, config.vocab_size)
    assert torch.isfinite(logits).all()


def test_attention_is_causal():
    """Changing a later token must not change the logits at earlier positions."""
    config = CONFIGS[1]
    torch.manual_seed(0)
    model = models.TinyGPT(config).eval()
    tokens = models.random_tokens(config, batch=1)
    changed = tokens.clone()
    changed[0, -1] = (changed[0, -1] + 1) % config.vocab_size
    with torch.no_grad():
        before, after = model(tokens), model(changed)
    assert torch.equal(before[0, :-1], after[0, :-1])
    assert not torch.equal(before[0, -1], after[0, -1])


def test_random_tokens_are_reproducible():
    config = CONFIGS[0]
    assert torch.equal(models.random_tokens(config, 2, seed=7), models.random_tokens(config, 2, seed=7))
    assert not torch.equal(models.random_tokens(config, 2, seed=7), models.random_tokens(config, 2, seed=8))


def test_mlp_shapes():
    mlp = models.MLP([8, 16, 4])
    assert mlp(torch.zeros(5, 8)).shape == (5, 4)
    assert sum(p.numel() for p in mlp.parameters()) == 8 * 16 + 16 + 16 * 4 + 4


@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda: models.GPTConfig(hidden=30, n_heads=4), ValueError, "hidden"),
        (lambda: models.GPTConfig(n_layers=0), ValueError, "n_layers"),
        (lambda: models.GPTConfig(seq_len=2.5), ValueError, "seq_len"),
        (lambda: models.TinyGPT({"hidden": 64}), TypeError, "config"),
        (lambda: models.random_tokens(models.GPTConfig(), batch=0), ValueError, "batch"),
        (lambda: models.MLP([8]), ValueError, "sizes"),
        (lambda: models.TinyGPT(CONFIGS[1])(torch.zeros(1, 17, dtype=torch.long)), ValueError, "seq_len"),
        (lambda: models.TinyGPT(CONFIGS[1])(torch.zeros(17, dtype=torch.long)), ValueError, "shape"),
    ],
)
def test_bad_input_is_refused(make, error, match):
    with pytest.raises(error, match=match):
        make()


def _greedy_without_cache(model, tokens, new):
    for _ in range(new):
        tokens = torch.cat([tokens, model(tokens)[:, -1].argmax(-1, keepdim=True)], dim=1)
    return tokens


def test_generate_with_a_kv_cache_matches_recomputing_the_whole_prefix():
    torch.manual_seed(0)
    config = models.GPTConfig(seq_len=24)
    model = models.TinyGPT(config).eval()
    prompt = models.random_tokens(config, batch=3)[:, :8]
    with torch.no_grad():
        expected = _greedy_without_cache(model, prompt, 16)
        logits, cache = model.prefill(prompt)
        torch.testing.assert_close(logits, model(prompt)[:, -1])
    assert len(cache) == config.n_layers and cache[0][0].shape == (
        3,
        config.n_heads,
        8,
        config.hidden // config.n_heads,
    )
    assert torch.equal(model.generate(prompt, 16), expected)


def test_generate_refuses_more_positions_than_the_model_has():
    config = models.GPTConfig(seq_len=10)
    model = models.TinyGPT(config)
    prompt = models.random_tokens(config, batch=1)[:, :8]
    assert model.generate(prompt, 3).shape == (1, 11)  # the last token needs no position of its own
    with pytest.raises(ValueError, match="max_new_tokens=4"):
        model.generate(prompt, 4)
    with pytest.raises(ValueError, match="max_new_tokens"):
        model.generate(prompt, 0)


def test_llm_config_counts_the_parameters_each_token_multiplies():
    config = models.GPTConfig(hidden=64, n_layers=2, vocab_size=256)
    shape = models.llm_config(config)
    assert shape.n_params == 2 * 12 * 64 * 64 + 64 * 256  # blocks' matrices + the tied output layer
    assert (shape.n_kv_heads, shape.head_dim) == (config.n_heads, 64 // config.n_heads)
