"""Small, odd model shapes for every supported config.json model_type, in transformers' own
keys (tests/test_llm_counts.py builds them on the meta device, tests/test_cli_models.py writes
them as config.json files): widths, head sizes and layer patterns no catalog model has.
"""

import json

BASE = dict(vocab_size=101, max_position_embeddings=64)
SMALL = {  # id: (model_type, config keys): odd widths, biases on and off, tied and untied heads
    "llama biases untied": (
        "llama",
        dict(hidden_size=72, intermediate_size=100, num_hidden_layers=2, num_attention_heads=6,
             num_key_value_heads=2, head_dim=20, attention_bias=True, mlp_bias=True,
             tie_word_embeddings=False),
    ),
    "llama tied": (
        "llama",
        dict(hidden_size=48, intermediate_size=70, num_hidden_layers=3, num_attention_heads=4,
             num_key_value_heads=4, tie_word_embeddings=True),
    ),
    "mistral window": (
        "mistral",
        dict(hidden_size=40, intermediate_size=66, num_hidden_layers=2, num_attention_heads=5,
             num_key_value_heads=1, head_dim=24, sliding_window=16),
    ),
    "qwen2 tied": (
        "qwen2",
        dict(hidden_size=56, intermediate_size=90, num_hidden_layers=2, num_attention_heads=7,
             num_key_value_heads=1, tie_word_embeddings=True),
    ),
    "qwen3 head_dim 36 biases": (
        "qwen3",
        dict(hidden_size=64, intermediate_size=88, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, head_dim=36, attention_bias=True),
    ),
    "gemma3_text 7 layers": (
        "gemma3_text",
        dict(hidden_size=96, intermediate_size=130, num_hidden_layers=7, num_attention_heads=3,
             num_key_value_heads=1, head_dim=40, sliding_window=8),
    ),
    "phi3 fused": (
        "phi3",
        dict(hidden_size=80, intermediate_size=90, num_hidden_layers=2, num_attention_heads=5,
             num_key_value_heads=5, pad_token_id=0),
    ),
    "mixtral": (
        "mixtral",
        dict(hidden_size=48, intermediate_size=36, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, head_dim=20, num_local_experts=4, num_experts_per_tok=2),
    ),
    "qwen2_moe shared sparse_step mlp_only": (
        "qwen2_moe",
        dict(hidden_size=48, intermediate_size=72, moe_intermediate_size=24,
             shared_expert_intermediate_size=40,
             num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, num_experts=6,
             num_experts_per_tok=2, decoder_sparse_step=2, mlp_only_layers=[3]),
    ),
    "qwen3_moe mlp_only head_dim 12": (
        "qwen3_moe",
        dict(hidden_size=40, intermediate_size=60, moe_intermediate_size=20, num_hidden_layers=3,
             num_attention_heads=4, num_key_value_heads=2, head_dim=12, num_experts=5, num_experts_per_tok=3,
             mlp_only_layers=[0], attention_bias=True),
    ),
    "olmoe biases": (
        "olmoe",
        dict(hidden_size=48, intermediate_size=30, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, num_experts=4, num_experts_per_tok=2, attention_bias=True),
    ),
    "gpt_oss sinks router biases": (
        "gpt_oss",
        dict(hidden_size=48, intermediate_size=36, num_hidden_layers=3, num_attention_heads=4,
             num_key_value_heads=2, head_dim=20, num_local_experts=4, num_experts_per_tok=2,
             sliding_window=8),
    ),
    "deepseek_v2 q direct, mlp biases": (
        "deepseek_v2",
        dict(hidden_size=48, intermediate_size=60, moe_intermediate_size=20, num_hidden_layers=3,
             num_attention_heads=4, num_key_value_heads=4, q_lora_rank=None, kv_lora_rank=16,
             qk_rope_head_dim=8, qk_nope_head_dim=12, v_head_dim=10, n_routed_experts=4, n_shared_experts=2,
             num_experts_per_tok=2, first_k_dense_replace=1, mlp_bias=True, attention_bias=True),
    ),
    "deepseek_v3 q_lora": (
        "deepseek_v3",
        dict(hidden_size=56, intermediate_size=80, moe_intermediate_size=24, num_hidden_layers=4,
             num_attention_heads=4, num_key_value_heads=4, q_lora_rank=24, kv_lora_rank=16,
             qk_rope_head_dim=8, qk_nope_head_dim=12, v_head_dim=14, n_routed_experts=8, n_shared_experts=1,
             num_experts_per_tok=2, first_k_dense_replace=2, n_group=2, topk_group=1),
    ),
    "glm4_moe qk norm biases": (
        "glm4_moe",
        dict(hidden_size=48, intermediate_size=70, moe_intermediate_size=22, num_hidden_layers=3,
             num_attention_heads=4, num_key_value_heads=2, head_dim=20, n_routed_experts=4,
             n_shared_experts=2, num_experts_per_tok=2, first_k_dense_replace=1, use_qk_norm=True,
             attention_bias=True),
    ),
}  # fmt: skip


def config_json(case: str) -> dict:
    """The config.json transformers writes for ``SMALL[case]`` (its config class's to_dict)."""
    import transformers

    model_type, keys = SMALL[case]
    return transformers.AutoConfig.for_model(model_type, **BASE, **keys).to_dict()


def write_config(folder, case: str) -> str:
    """``SMALL[case]``'s config.json written into ``folder``; its path."""
    path = folder / "config.json"
    path.write_text(json.dumps(config_json(case)))
    return str(path)
