"""LoRA counts of 2026's layers against peft (issue 35, item 5): a dense Qwen3 and small random
mixtures of experts, with MLA, dense first layers and shared experts, built by transformers on
the meta device from its own config classes (sizes no catalog model has), adapted by peft on the
attention projections and on all linear layers. memory.lora_params must equal peft's trainable
count exactly, the experts counted as peft counts them (memory.PEFT_FUSED_EXPERT_TYPES)."""

import os
import warnings

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

from lab_utils import llms, memory  # noqa: E402

H = 64
CONFIGS = {
    "qwen3": dict(
        hidden_size=H, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=24, vocab_size=100,
    ),
    "qwen3_moe": dict(
        hidden_size=H, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_experts=6, num_experts_per_tok=2,
        vocab_size=100,
    ),
    "olmoe": dict(
        hidden_size=H, intermediate_size=40, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=4, num_experts=5, num_experts_per_tok=2, vocab_size=100,
    ),
    "qwen2_moe": dict(
        hidden_size=H, intermediate_size=96, moe_intermediate_size=32, shared_expert_intermediate_size=48,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, num_experts=4,
        num_experts_per_tok=2, vocab_size=100,
    ),
    "mixtral": dict(
        hidden_size=H, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2, vocab_size=100,
    ),
    "deepseek_v3": dict(
        hidden_size=H, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=3,
        first_k_dense_replace=1, num_attention_heads=4, num_key_value_heads=4, n_routed_experts=4,
        n_shared_experts=1, num_experts_per_tok=2, n_group=1, topk_group=1, kv_lora_rank=16,
        q_lora_rank=24, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=12, vocab_size=100,
    ),
    "glm4_moe": dict(
        hidden_size=H, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=2,
        first_k_dense_replace=1, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        n_routed_experts=4, n_shared_experts=1, num_experts_per_tok=2, n_group=1, topk_group=1,
        vocab_size=100,
    ),
    "gpt_oss": dict(
        hidden_size=H, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, num_local_experts=4, num_experts_per_tok=2, vocab_size=100,
        layer_types=["sliding_attention", "full_attention"],
    ),
}  # fmt: skip
ATTENTION = [
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "q_a_proj",
    "q_b_proj",
    "kv_a_proj_with_mqa",
    "kv_b_proj",
]


def _config(model_type):
    return transformers.AutoConfig.for_model(model_type, **CONFIGS[model_type])


def _ours(config):
    """The config as its config.json publishes it: transformers 5 writes qwen3_moe's expert count
    as num_local_experts, the published Qwen3 MoE configs as num_experts."""
    keys = config.to_dict()
    if config.model_type == "qwen3_moe":
        keys["num_experts"] = config.num_experts
    return llms.from_hf_config(keys)


def _peft_count(config, targets, rank):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(config)
        wanted = "all-linear" if targets == "all-linear" else ATTENTION
        adapted = peft.get_peft_model(model, peft.LoraConfig(r=rank, target_modules=wanted))
    return sum(p.numel() for p in adapted.parameters() if p.requires_grad)


@pytest.mark.parametrize("targets", memory.LORA_TARGETS)
@pytest.mark.parametrize("model_type", list(CONFIGS))
def test_lora_counts_equal_peft(model_type, targets):
    config = _config(model_type)
    assert memory.lora_params(_ours(config), rank=4, targets=targets) == _peft_count(config, targets, 4)


def test_a_mixture_of_experts_adapts_its_experts_where_peft_does():
    config = _ours(_config("qwen3_moe"))
    attention = memory.lora_params(config, rank=8, targets="attention")
    everything = memory.lora_params(config, rank=8, targets="all-linear")
    experts = sum(layer.mlp.n_experts for layer in config.layers)
    assert everything - attention > experts * 8 * H  # every expert has an adapter
    gpt_oss = _ours(_config("gpt_oss"))  # peft leaves its experts alone
    assert memory.lora_params(gpt_oss, rank=8, targets="all-linear") == memory.lora_params(
        gpt_oss, rank=8, targets="attention"
    )
