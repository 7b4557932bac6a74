"""llms: the public model configurations are sourced and self-consistent; lookups forgive spelling.

The shapes live in lab_utils/data/llm_configs.toml, each with the config.json it comes from.
These tests check invariants and one model worked out by hand, not a copy of the file.
"""

import dataclasses
import json
import sys

import pytest

from lab_utils import catalogs, llms, lookup

CATALOG = llms.catalog()
DENSE = [c for c in CATALOG if not c.is_moe]


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
    assert config.source.endswith("config.json")
    assert 2018 <= int(config.source_date[:4]) <= 2026


@pytest.mark.parametrize("config", CATALOG, ids=lambda c: c.name)
def test_heads_group_and_head_dim_comes_from_the_config(config):
    assert config.n_heads % config.n_kv_heads == 0  # grouped-query attention: whole groups
    if config.config_head_dim is None:
        assert config.head_dim == config.hidden // config.n_heads
    assert all(layer.attention.head_dim == config.head_dim for layer in config.layers)


def test_head_dim_is_the_config_s_not_hidden_over_heads():
    # Qwen3-8B: 4096 / 32 = 128 = head_dim; gpt-oss: 2880 / 64 = 45, head_dim 64; Gemma 3 27B:
    # 5376 / 32 = 168, head_dim 128; DeepSeek-V3 (MLA): qk_nope_head_dim 128 + qk_rope_head_dim 64
    assert llms.get("gpt-oss-20b").head_dim == 64
    assert llms.get("Gemma-3-27B").head_dim == 128
    assert llms.get("DeepSeek-V3").head_dim == 192


@pytest.mark.parametrize("config", [c for c in DENSE if c.family], ids=lambda c: c.name)
def test_parameter_count_agrees_with_the_shape(config):
    # Per layer: Q and O (hidden x q width each), K and V (hidden x KV width each), and an MLP of
    # two (GPT-2) or three (gated) hidden x ffn matrices; plus the vocab x hidden embedding,
    # shared with the output layer (tied) or not. The count must be within 3% of one of these
    # four (the rest: norms, biases, position embeddings).
    h, q, kv = config.hidden, config.n_heads * config.head_dim, config.n_kv_heads * config.head_dim
    counts = [
        config.n_layers * (2 * h * q + 2 * h * kv + matrices * h * config.ffn_hidden)
        + embeddings * config.vocab_size * h
        for matrices in (2, 3)
        for embeddings in (1, 2)
    ]
    assert min(abs(config.n_params / c - 1) for c in counts) < 0.03, counts


def test_counts_add_up_from_the_parts():
    for config in CATALOG:
        layers = sum(layer.params for layer in config.layers)
        assert config.n_params == config.embedding_params + layers + config.head_params
        active = sum(layer.active_params for layer in config.layers)
        assert config.params_per_token == config.embedding_params + active + config.head_params
        assert config.is_moe == (config.params_per_token < config.n_params)


def test_kimi_k2_has_its_full_shape():
    # moonshotai/Kimi-K2-Instruct config.json: DeepSeek-V3's layout with 64 heads, 384 routed
    # experts of width 2048 (8 per token, one shared) and one dense first layer
    kimi = llms.get("Kimi K2")
    assert kimi.is_moe and kimi.n_layers == 61 and kimi.hidden == 7168
    assert kimi.layers[0].mlp.kind == "dense" and kimi.layers[1].mlp.kind == "moe"
    moe = kimi.layers[1].mlp
    assert (moe.n_experts, moe.top_k, moe.intermediate, moe.shared_intermediate) == (384, 8, 2048, 2048)
    assert {layer.attention.kind for layer in kimi.layers} == {"mla"}
    assert kimi.layers[0].attention.kv_values_per_token == 512 + 64
    # the model card's "1T total, 32B activated" (rounded), here exact
    assert 1.0e12 < kimi.n_params < 1.05e12 and 32e9 < kimi.params_per_token < 33e9
    assert llms.get("gpt2").params_per_token == llms.get("gpt2").n_params


def test_sliding_layers_follow_the_config():
    gemma, oss = llms.get("Gemma-3-27B"), llms.get("gpt-oss-20b")
    kinds = [layer.attention.kind for layer in gemma.layers]
    assert kinds[:6] == ["sliding"] * 5 + ["full"] and kinds.count("full") == 62 // 6  # five of every six
    assert [layer.attention.kind for layer in oss.layers][:4] == ["sliding", "full", "sliding", "full"]
    window = oss.layers[0].attention
    assert window.window == 128 and window.cached_tokens(100) == 100 and window.cached_tokens(4096) == 128
    assert oss.layers[1].attention.cached_tokens(4096) == 4096
    assert {layer.attention.kind for layer in llms.get("mistral-7b").layers} == {"sliding"}
    assert {layer.attention.kind for layer in llms.get("Mistral-Small-24B").layers} == {"full"}


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
    with pytest.raises(ValueError, match="give n_params, layers"):
        llms.LLMConfig(name="x", aliases=(), n_layers=1, hidden=8, source="s", source_date="2024")
    moe = llms.get("Qwen3-30B-A3B")
    with pytest.raises(ValueError, match="from_hf_config"):  # a MoE's layers are given, not rebuilt
        dataclasses.replace(moe, n_layers=2)
    with pytest.raises(ValueError, match="max_positions"):
        dataclasses.replace(llms.get("gpt2"), max_positions=None, n_params=None)


QWEN3 = {
    "model_type": "qwen3",
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 24,
    "vocab_size": 100,
}


def test_a_config_json_file_a_folder_or_a_dict(tmp_path):
    folder = tmp_path / "my-qwen"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(QWEN3))
    from_file, from_folder = llms.resolve(str(folder / "config.json")), llms.resolve(folder)
    assert from_file.n_params == from_folder.n_params == llms.from_hf_config(QWEN3).n_params
    assert from_folder.name == "my-qwen" and from_folder.source.endswith("config.json")
    assert llms.resolve(QWEN3).head_dim == 24
    assert llms.resolve("Qwen3-8B") is llms.get("Qwen3-8B")


@pytest.mark.parametrize("key", ["hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size"])
def test_a_missing_key_is_named(key):
    broken = {k: v for k, v in QWEN3.items() if k != key}
    with pytest.raises(ValueError, match=f"lacks {key}"):
        llms.from_hf_config(broken)


def test_an_unknown_model_type_lists_the_supported_ones(tmp_path):
    with pytest.raises(ValueError, match=r"model_type='mamba' is not supported; supported: gpt2, llama"):
        llms.from_hf_config(dict(QWEN3, model_type="mamba"))
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="not a readable JSON config"):
        llms.resolve(str(bad))
    with pytest.raises(ValueError, match="no such config.json"):
        llms.resolve(str(tmp_path / "missing.json"))
    with pytest.raises(ValueError, match="write hf:org/model"):
        llms.resolve("org/model")
    with pytest.raises(TypeError, match="model must be"):
        llms.resolve(8)


def test_hf_repo_ids_say_how_to_pass_a_file_when_the_hub_is_out_of_reach(monkeypatch):
    # no network in the tests: the download is made to fail as it does offline
    huggingface_hub = pytest.importorskip("huggingface_hub")

    def offline(*args, **kwargs):
        raise OSError("offline")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", offline)
    with pytest.raises(ValueError, match="download its config.json and pass its path") as error:
        llms.resolve("hf:Qwen/Qwen3-8B")
    assert "\n" not in str(error.value)
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # not installed
    with pytest.raises(ValueError, match="huggingface_hub is not installed"):
        llms.resolve("hf:Qwen/Qwen3-8B")


def test_a_layer_that_cannot_be_is_refused():
    with pytest.raises(ValueError, match="attention kinds are full, sliding, mla"):
        llms.Attention("linear", 4, 4, 16, 16)
    with pytest.raises(ValueError, match="window"):
        llms.Attention("sliding", 4, 4, 16, 16)
    with pytest.raises(ValueError, match="kv_lora_rank"):
        llms.Attention("mla", 4, 4, 16, 16)
    with pytest.raises(ValueError, match="top_k=9 must be 1 to n_experts=8"):
        llms.MLP("moe", 32, n_experts=8, top_k=9)
    # a MoE layer: router + shared 100, 8 experts of 10, 2 per token
    layer = llms.Layer(llms.Attention("full", 4, 2, 16, 16), llms.MLP("moe", 4, 8, 2), 50, 100, 10)
    assert (layer.routed_expert_params, layer.params, layer.active_params) == (80, 230, 170)
    assert layer.attention.kv_values_per_token == 2 * (16 + 16)
