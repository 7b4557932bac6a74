"""The LLM memory formulas against the real thing: models of ``transformers`` and adapters of
``peft`` (the ``llm`` extra), built from configs with random weights on the CPU, never
downloaded (HF_HUB_OFFLINE=1).

- parameter counts of every catalog model of a known family against
  ``AutoModelForCausalLM.from_config`` on the meta device (exact);
- ``memory.lora_params`` against ``peft.get_peft_model`` (exact), fused (GPT-2) and separate
  (Llama, Qwen2) projections, attention only and all-linear;
- ``memory.llm_activation_bytes`` against the bytes of the distinct storages autograd saves in
  one bf16 forward pass and loss (``llm_measure.saved_tensors``), eager and SDPA, within 10%.
"""

import dataclasses
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing here may reach the Hub
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

from lab_utils import llm_measure, llms, memory  # noqa: E402

FAMILY_MODELS = [c for c in llms.catalog() if c.family]
pytestmark = [pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning"),
              pytest.mark.filterwarnings("ignore:fan_in_fan_out is set to False:UserWarning")]


def small(name, **shape):
    """A catalog model's layout (family, biases, tying) at a small shape."""
    return dataclasses.replace(llms.get(name), name=f"small {name}", n_params=None, **shape)


SHAPES = [  # (model, batch, seq_len): each family, grouped-query and not, fused and separate q/k/v
    (small("llama-3.1-8b", n_layers=2, hidden=64, n_heads=4, n_kv_heads=2, ffn_hidden=96, vocab_size=100), 2, 16),
    (small("llama-3.1-8b", n_layers=3, hidden=128, n_heads=8, n_kv_heads=2, ffn_hidden=320, vocab_size=500), 1, 64),
    (small("llama-3.2-1b", n_layers=2, hidden=96, n_heads=6, n_kv_heads=6, ffn_hidden=256, vocab_size=1000), 3, 40),
    (small("qwen2.5-0.5b", n_layers=2, hidden=64, n_heads=4, n_kv_heads=1, ffn_hidden=128, vocab_size=300), 2, 32),
    (small("gpt2", n_layers=2, hidden=64, n_heads=4, n_kv_heads=4, ffn_hidden=256, vocab_size=100,
           max_positions=64), 2, 16),
    (small("gpt2", n_layers=3, hidden=128, n_heads=8, n_kv_heads=8, ffn_hidden=512, vocab_size=500,
           max_positions=128), 1, 96),
]


@pytest.mark.parametrize("config", FAMILY_MODELS, ids=lambda c: c.name)
def test_parameter_counts_equal_what_transformers_builds(config):
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(llm_measure.hf_config(config))
    assert sum(p.numel() for p in model.parameters()) == config.n_params  # tied weights counted once


def test_published_parameter_counts():
    # model cards and the Hub's safetensors metadata, exact
    assert llms.get("Llama-3.1-8B").n_params == 8_030_261_248
    assert llms.get("Qwen2.5-7B").n_params == 7_615_616_512
    assert llms.get("gpt2").n_params == 124_439_808


PEFT_TARGETS = {  # memory.LORA_TARGETS in peft's words
    ("gpt2", "attention"): r".*\.attn\.(c_attn|c_proj)",
    ("llama", "attention"): ["q_proj", "k_proj", "v_proj", "o_proj"],
}


@pytest.mark.parametrize("targets", memory.LORA_TARGETS)
@pytest.mark.parametrize("config", [SHAPES[0][0], SHAPES[2][0], SHAPES[3][0], SHAPES[4][0]], ids=lambda c: c.name)
def test_lora_counts_equal_peft(config, targets):
    model = llm_measure.random_model(llm_measure.hf_config(config), dtype="fp32")
    wanted = PEFT_TARGETS.get((config.family, targets), "all-linear")
    adapted = peft.get_peft_model(model, peft.LoraConfig(r=8, target_modules=wanted))
    trainable = sum(p.numel() for p in adapted.parameters() if p.requires_grad)
    assert memory.lora_params(config, rank=8, targets=targets) == trainable


@pytest.mark.parametrize("targets", memory.LORA_TARGETS)
@pytest.mark.parametrize("name", ["gpt2", "Llama-3.1-8B"])
def test_lora_counts_of_catalog_models_equal_peft_on_the_meta_device(name, targets):
    config = llms.get(name)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(llm_measure.hf_config(config))
    wanted = PEFT_TARGETS.get((config.family, targets), "all-linear")
    adapted = peft.get_peft_model(model, peft.LoraConfig(r=16, target_modules=wanted))
    trainable = sum(p.numel() for p in adapted.parameters() if p.requires_grad)
    assert memory.lora_params(config, rank=16, targets=targets) == trainable


def test_gpt2_fused_attention_has_a_third_fewer_adapter_inputs_than_separate_q_k_v():
    # one h x 3h adapter: r(h + 3h); three h x h adapters would be 3 r(h + h) = r(6h)
    gpt2 = llms.get("gpt2")
    assert memory.lora_params(gpt2, rank=1) == 12 * ((768 + 3 * 768) + (768 + 768))


@pytest.mark.parametrize("attention", memory.ATTENTION)
@pytest.mark.parametrize("config, batch, seq_len", SHAPES, ids=lambda v: getattr(v, "name", str(v)))
def test_activation_bytes_within_10_percent_of_what_autograd_saves(config, batch, seq_len, attention):
    model = llm_measure.random_model(llm_measure.hf_config(config, attention=attention), dtype="bf16")
    torch.manual_seed(1)
    tokens = torch.randint(0, config.vocab_size, (batch, seq_len))
    measured = sum(saved.size_bytes for saved in llm_measure.saved_tensors(model, tokens))
    predicted = memory.llm_activation_bytes(config, seq_len=seq_len, batch=batch, attention=attention)
    assert predicted == pytest.approx(measured, rel=0.10)


def test_eager_attention_adds_the_seq_by_seq_softmax_and_sdpa_does_not():
    config, batch, seq_len = SHAPES[1]
    saved = {}
    for attention in memory.ATTENTION:
        model = llm_measure.random_model(llm_measure.hf_config(config, attention=attention))
        tokens = torch.randint(0, config.vocab_size, (batch, seq_len))
        saved[attention] = {tensor.shape for tensor in llm_measure.saved_tensors(model, tokens)}
    scores = (batch, config.n_heads, seq_len, seq_len)
    assert scores in saved["eager"] and scores not in saved["sdpa"]


def test_hf_config_refuses_a_model_without_a_family():
    with pytest.raises(ValueError, match="Kimi K2"):
        llm_measure.hf_config("Kimi K2")
