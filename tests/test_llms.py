"""llms: the public model configurations are sourced and self-consistent; lookups forgive spelling.

The shapes live in lab_utils/data/llm_configs.toml, each with the config.json it comes from.
These tests check invariants and one model worked out by hand, not a copy of the file.
"""

import dataclasses

import pytest

from lab_utils import catalogs, llms, lookup

CATALOG = llms.catalog()
DENSE = [c for c in CATALOG if c.n_active_params is None]


def test_llama_3_1_8b_worked_from_its_config_json():
    # meta-llama/Llama-3.1-8B config.json: hidden_size 4096, num_attention_heads 32,
    # num_key_value_heads 8, so each head is 4096 / 32 = 128 wide and 4 query heads share a KV head.
    llama = llms.get("llama-3.1-8b")
    assert (llama.hidden, llama.n_heads, llama.n_kv_heads) == (4096, 32, 8)
    assert llama.head_dim == 128


@pytest.mark.parametrize("config", CATALOG, ids=lambda c: c.name)
def test_every_model_is_sourced_and_dated(config):
    assert config.source.strip()
    assert catalogs.DATE.match(config.source_date), config.source_date
    assert 2018 <= int(config.source_date[:4]) <= 2026


@pytest.mark.parametrize("config", [c for c in CATALOG if c.n_heads], ids=lambda c: c.name)
def test_heads_divide_the_width(config):
    assert config.hidden % config.n_heads == 0
    assert config.head_dim == config.hidden // config.n_heads
    assert config.n_heads % config.n_kv_heads == 0  # grouped-query attention: whole groups


@pytest.mark.parametrize("config", [c for c in DENSE if c.ffn_hidden], ids=lambda c: c.name)
def test_parameter_count_agrees_with_the_shape(config):
    # Per layer: Q and O (hidden^2 each), K and V (hidden x KV width each), and an MLP of two
    # (GPT-2) or three (gated: Llama, Mistral, Qwen) hidden x ffn matrices; plus the vocab x
    # hidden embedding, shared with the output layer (tied) or not. The published total must be
    # within 3% of one of these four counts (the rest: norms, biases, position embeddings).
    h, kv = config.hidden, config.n_kv_heads * config.head_dim
    counts = [
        config.n_layers * (2 * h * h + 2 * h * kv + matrices * h * config.ffn_hidden)
        + embeddings * config.vocab_size * h
        for matrices in (2, 3)
        for embeddings in (1, 2)
    ]
    assert min(abs(config.n_params / c - 1) for c in counts) < 0.03, counts


def test_kimi_k2_is_a_mixture_of_experts():
    kimi = llms.get("Kimi K2")
    assert kimi.n_active_params < kimi.n_params
    assert kimi.params_per_token == kimi.n_active_params
    assert kimi.head_dim is None
    assert llms.get("gpt2").params_per_token == llms.get("gpt2").n_params


def test_larger_models_have_more_parameters():
    assert llms.get("llama-3.1-70b").n_params > llms.get("llama-3.1-8b").n_params > llms.get("gpt2").n_params
    assert llms.get("llama-3.1-70b").n_layers > llms.get("llama-3.1-8b").n_layers


def test_names_and_aliases_are_unique():
    keys = [lookup.key(s) for c in CATALOG for s in (c.name, *c.aliases)]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("spelling", ["llama 3.1 8b", "LLAMA_3.1_8B", "Llama-3.1-8B", "llama3.1-8b"])
def test_lookup_forgives_spelling(spelling):
    assert llms.get(spelling).name == "Llama-3.1-8B"


def test_unknown_model_suggests_close_names():
    with pytest.raises(ValueError, match=r"name='llama-3.1-7b'.*closest:.*Llama-3.1"):
        llms.get("llama-3.1-7b")
    with pytest.raises(TypeError, match="name"):
        llms.get(8)


def test_gpt2_count_worked_by_hand():
    # token and position embeddings (tied head); per block: c_attn h x 3h + 3h, attn.c_proj h x h + h,
    # c_fc h x 4h + 4h, mlp.c_proj 4h x h + h, two LayerNorms of 2h; a final LayerNorm
    h = 768
    block = (h * 3 * h + 3 * h) + (h * h + h) + (h * 4 * h + 4 * h) + (4 * h * h + h) + 2 * 2 * h
    assert llms.get("gpt2").n_params == 50257 * h + 1024 * h + 12 * block + 2 * h == 124_439_808


def test_a_count_that_disagrees_with_the_shapes_is_refused():
    with pytest.raises(ValueError, match="n_params=8000000000"):
        dataclasses.replace(llms.get("llama-3.1-8b"), n_params=8_000_000_000)
    with pytest.raises(ValueError, match="give n_params"):
        llms.LLMConfig(name="x", aliases=(), n_layers=1, hidden=8, source="s", source_date="2024")
    with pytest.raises(ValueError, match="max_positions"):
        dataclasses.replace(llms.get("gpt2"), max_positions=None, n_params=None)
