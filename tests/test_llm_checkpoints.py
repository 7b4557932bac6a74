"""llms: the precision a checkpoint is published in, read from config.json's quantization_config.

Each format's bytes per parameter are worked out by hand from its layout: block FP8 (DeepSeek-V3,
Kimi K2), MXFP4 experts (gpt-oss), AWQ and GPTQ int4, compressed-tensors int4; and the fits the
publishers state: gpt-oss-20b within 16 GB, gpt-oss-120b on one 80 GB GPU (OpenAI, "Introducing
gpt-oss", 2025-08).
"""

import pytest

from lab_utils import llms

SMALL_MOE = {
    "model_type": "qwen3_moe",
    "hidden_size": 64,
    "intermediate_size": 96,
    "moe_intermediate_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "num_experts": 8,
    "num_experts_per_tok": 2,
    "vocab_size": 500,
    "torch_dtype": "bfloat16",
}


def stored_bytes(config):
    return config.checkpoint.weight_bytes_per_param * config.n_params


def test_gpt_oss_fits_as_published():
    # routed experts in MXFP4: 4 bits a value and one 8-bit scale per 32 values, 4.25 bits
    small, large = llms.get("gpt-oss-20b"), llms.get("gpt-oss-120b")
    assert small.checkpoint.format == "mxfp4"
    assert small.checkpoint.expert_bytes_per_param == 4.25 / 8
    assert small.checkpoint.other_bytes_per_param == 2  # attention, router, embeddings, head: bf16
    assert stored_bytes(small) < 16e9
    assert stored_bytes(large) < 80e9
    assert stored_bytes(large) > 0.5 * large.n_params  # not everything is 4-bit


def test_block_fp8_of_deepseek_v3_and_kimi_k2():
    # one byte a weight and one fp32 scale per 128 x 128 block; embeddings and head in bf16
    for name in ("DeepSeek-V3", "Kimi K2"):
        config = llms.get(name)
        assert config.checkpoint.format == "fp8-block"
        assert config.checkpoint.expert_bytes_per_param == 1 + 4 / (128 * 128)
        assert 1 < config.checkpoint.weight_bytes_per_param < 1.01
    assert 1.02e12 < stored_bytes(llms.get("Kimi K2")) < 1.04e12  # about 1 TB, not bf16's 2.1


def test_no_quantization_config_is_the_torch_dtype():
    config = llms.from_hf_config(SMALL_MOE)
    assert (config.checkpoint.format, config.checkpoint.weight_bytes_per_param) == ("bf16", 2)
    assert llms.from_hf_config(dict(SMALL_MOE, torch_dtype=None)).checkpoint is None  # unknown: not guessed


@pytest.mark.parametrize("method", ["awq", "gptq"])
def test_int4_groups_carry_a_scale_and_a_zero_point(method):
    # per 128 weights: 64 bytes of 4-bit values, a 2-byte fp16 scale, a packed 4-bit zero point
    quant = {"quant_method": method, "bits": 4, "group_size": 128}
    config = llms.from_hf_config(dict(SMALL_MOE, quantization_config=quant))
    assert config.checkpoint.format == f"int4-{method}"
    assert config.checkpoint.expert_bytes_per_param == 0.5 + 2.5 / 128
    kept = config.embedding_params + config.head_params  # stay bf16
    other = config.n_params - sum(layer.routed_expert_params for layer in config.layers)
    assert config.checkpoint.other_bytes_per_param == pytest.approx(
        ((other - kept) * (0.5 + 2.5 / 128) + 2 * kept) / other
    )


def test_compressed_tensors_ignores_what_its_list_names():
    # Kimi K2 Thinking's layout: experts int4 in groups of 32 (bf16 scale), attention left in bf16
    quant = {
        "quant_method": "compressed-tensors",
        "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "int", "group_size": 32}}},
        "ignore": ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*"],
    }
    config = llms.from_hf_config(dict(SMALL_MOE, quantization_config=quant))
    assert config.checkpoint.format == "int4-ct"
    assert config.checkpoint.expert_bytes_per_param == 0.5 + 2 / 32
    assert config.checkpoint.other_bytes_per_param == 2


def test_an_unknown_format_is_named():
    with pytest.raises(ValueError, match="quant_method='bitnet'.*supported: fp8, mxfp4"):
        llms.from_hf_config(dict(SMALL_MOE, quantization_config={"quant_method": "bitnet"}))
