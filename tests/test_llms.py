"""llms: the public model configurations match facts.md; lookups forgive spelling."""

import pytest

from lab_utils import llms

# facts.md, "Public model configurations": layers, hidden, heads, KV heads, FFN, vocab, parameters.
FACTS = {
    "GPT-2 small": (12, 768, 12, 12, 3072, 50_257, 124e6),
    "Mistral-7B-v0.1": (32, 4096, 32, 8, 14_336, 32_000, 7.24e9),
    "Qwen2.5-7B": (28, 3584, 28, 4, 18_944, 152_064, 7.6e9),
    "Llama-3.1-8B": (32, 4096, 32, 8, 14_336, 128_256, 8.0e9),
    "Llama-3.1-70B": (80, 8192, 64, 8, 28_672, 128_256, 70.6e9),
}


@pytest.mark.parametrize("name, row", FACTS.items())
def test_configs_match_facts(name, row):
    config = llms.get(name)
    assert (config.n_layers, config.hidden, config.n_heads, config.n_kv_heads,
            config.ffn_hidden, config.vocab_size) == row[:6]
    assert config.n_params == pytest.approx(row[6])
    assert config.source and config.source_date


def test_head_dim_is_128_for_llama_and_mistral():
    assert llms.get("llama-3.1-8b").head_dim == 128
    assert llms.get("mistral-7b").head_dim == 128


def test_kimi_k2_is_a_mixture_of_experts():
    kimi = llms.get("Kimi K2")
    assert kimi.n_params == pytest.approx(1.04e12)
    assert kimi.params_per_token == pytest.approx(32e9)
    assert kimi.head_dim is None
    assert llms.get("gpt2").params_per_token == llms.get("gpt2").n_params


def test_catalog_holds_every_model_once():
    names = [c.name for c in llms.catalog()]
    assert len(names) == len(set(names)) == 6


@pytest.mark.parametrize("spelling", ["llama 3.1 8b", "LLAMA_3.1_8B", "Llama-3.1-8B", "llama3.1-8b"])
def test_lookup_forgives_spelling(spelling):
    assert llms.get(spelling).name == "Llama-3.1-8B"


def test_unknown_model_suggests_close_names():
    with pytest.raises(ValueError, match=r"name='llama-3.1-7b'.*closest:.*Llama-3.1"):
        llms.get("llama-3.1-7b")
    with pytest.raises(TypeError, match="name"):
        llms.get(8)
