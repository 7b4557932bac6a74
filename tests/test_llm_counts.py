"""llms.from_hf_config against transformers: every supported model_type, built on the meta
device from transformers' own config classes at small, odd shapes no catalog model has, and
every catalog model at its published size. n_params must equal the sum of the built model's
parameters exactly, and params_per_token the total less the routed experts a token skips,
counted from the module tree (each layer's ``mlp.experts`` tensors, top_k of n_experts used).
Nothing is downloaded (HF_HUB_OFFLINE=1); meta tensors hold no memory.
"""

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing here may reach the Hub
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from hf_shapes import BASE, SMALL  # noqa: E402

from lab_utils import llm_measure, llms  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _hf(model_type, keys):
    return transformers.AutoConfig.for_model(model_type, **BASE, **keys)


def _built(hf_config):
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(hf_config)


def _per_token(model, hf_config) -> int:
    """The built model's parameters less, in each layer, the routed experts' tensors a token
    does not use: (n_experts - top_k) / n_experts of them."""
    total = sum(p.numel() for p in model.parameters())
    text = getattr(hf_config, "text_config", hf_config)
    top_k = getattr(text, "num_experts_per_tok", 0)
    for name, module in model.named_modules():
        if name.endswith("mlp.experts"):
            routed = sum(p.numel() for p in module.parameters())
            experts = next(module.parameters()).shape[0]
            total -= routed * (experts - top_k) // experts
    return total


@pytest.mark.parametrize("case", SMALL, ids=str)
def test_counts_equal_a_meta_build_of_every_model_type(case):
    model_type, keys = SMALL[case]
    hf = _hf(model_type, keys)
    config = llms.from_hf_config(hf.to_dict())
    model = _built(hf)
    assert config.n_params == sum(p.numel() for p in model.parameters())
    assert config.params_per_token == _per_token(model, hf)
    assert config.is_moe == any(name.endswith("mlp.experts") for name, _ in model.named_modules())
    assert len(config.layers) == keys["num_hidden_layers"]


def test_gemma3_is_read_through_its_text_config():
    text = dict(SMALL["gemma3_text 7 layers"][1], **BASE)
    multimodal = transformers.Gemma3Config(text_config=text).to_dict()
    config = llms.from_hf_config(multimodal)
    model = _built(transformers.AutoConfig.for_model("gemma3_text", **text))
    assert config.model_type == "gemma3_text"
    assert config.n_params == sum(p.numel() for p in model.parameters())  # the language model only


def test_kimi_k2_model_type_is_deepseek_v3():
    keys = dict(SMALL["deepseek_v3 q_lora"][1], first_k_dense_replace=1)
    hf = _hf("deepseek_v3", keys)
    config = llms.from_hf_config(dict(hf.to_dict(), model_type="kimi_k2"))
    assert config.n_params == sum(p.numel() for p in _built(hf).parameters())


def test_layers_say_what_the_config_says():
    moe = llms.from_hf_config(_hf(*SMALL["qwen2_moe shared sparse_step mlp_only"]).to_dict())
    # decoder_sparse_step 2: layers 1 and 3 sparse, but 3 is in mlp_only_layers
    assert [layer.mlp.kind for layer in moe.layers] == ["dense", "moe", "dense", "dense"]
    assert moe.layers[1].mlp.shared_intermediate == 40 and moe.layers[1].mlp.top_k == 2
    mla = llms.from_hf_config(_hf(*SMALL["deepseek_v3 q_lora"]).to_dict())
    attention = mla.layers[0].attention
    assert (attention.kind, attention.head_dim, attention.v_head_dim, attention.q_lora_rank) == (
        "mla",
        20,
        14,
        24,
    )
    assert attention.kv_values_per_token == 16 + 8
    oss = llms.from_hf_config(_hf(*SMALL["gpt_oss sinks router biases"]).to_dict())
    assert [layer.attention.kind for layer in oss.layers] == ["sliding", "full", "sliding"]
    gemma = llms.from_hf_config(_hf(*SMALL["gemma3_text 7 layers"]).to_dict())
    assert [layer.attention.kind for layer in gemma.layers].count("full") == 1  # layer 6 of 7


@pytest.mark.parametrize("config", llms.catalog(), ids=lambda c: c.name)
def test_every_catalog_model_at_its_published_size(config):
    # the meta build of even Kimi K2's trillion parameters takes under a second here
    hf = llm_measure.hf_config(config)
    model = _built(hf)
    assert config.n_params == sum(p.numel() for p in model.parameters())
    assert config.params_per_token == _per_token(model, hf)


def test_published_totals():
    # model cards and the Hub's safetensors metadata; DeepSeek-V3's card says 671B (+14B MTP)
    exact = {
        "Qwen3-8B": 8_190_735_360,
        "Qwen3-30B-A3B": 30_532_122_624,
        "gpt-oss-20b": 20_914_757_184,
        "gpt-oss-120b": 116_829_156_672,
        "Mixtral-8x7B": 46_702_792_704,
        "Mistral-Small-24B": 23_572_403_200,
    }
    assert {name: llms.get(name).n_params for name in exact} == exact
    assert round(llms.get("DeepSeek-V3").n_params / 1e9) == 671
    # active per token, as the cards round them: 3.3B (Qwen3-30B-A3B), 37B (DeepSeek-V3)
    assert round(llms.get("Qwen3-30B-A3B").params_per_token / 1e8) == 34  # 3.35B with the embedding
    assert round(llms.get("DeepSeek-V3").params_per_token / 1e9) in (37, 38)
