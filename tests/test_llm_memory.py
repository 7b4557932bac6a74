"""The LLM memory formulas against the real thing: models of ``transformers`` and adapters of
``peft`` (the ``llm`` extra), built from configs with random weights on the CPU, never
downloaded (HF_HUB_OFFLINE=1).

- (parameter counts against transformers' meta-device builds: tests/test_llm_counts.py);
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

pytestmark = [
    pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning"),
    pytest.mark.filterwarnings("ignore:fan_in_fan_out is set to False:UserWarning"),
]


def small(name, **shape):
    """A catalog model's layout (family, biases, tying) at a small shape."""
    return dataclasses.replace(llms.get(name), name=f"small {name}", n_params=None, **shape)


SHAPES = [  # (model, batch, seq_len): each family, grouped-query and not, fused and separate q/k/v
    (
        small("llama-3.1-8b", n_layers=2, hidden=64, n_heads=4, n_kv_heads=2, ffn_hidden=96, vocab_size=100),
        2,
        16,
    ),
    (
        small(
            "llama-3.1-8b", n_layers=3, hidden=128, n_heads=8, n_kv_heads=2, ffn_hidden=320, vocab_size=500
        ),
        1,
        64,
    ),
    (
        small(
            "llama-3.2-1b", n_layers=2, hidden=96, n_heads=6, n_kv_heads=6, ffn_hidden=256, vocab_size=1000
        ),
        3,
        40,
    ),
    (
        small("qwen2.5-0.5b", n_layers=2, hidden=64, n_heads=4, n_kv_heads=1, ffn_hidden=128, vocab_size=300),
        2,
        32,
    ),
    (
        small(
            "gpt2",
            n_layers=2,
            hidden=64,
            n_heads=4,
            n_kv_heads=4,
            ffn_hidden=256,
            vocab_size=100,
            max_positions=64,
        ),
        2,
        16,
    ),
    (
        small(
            "gpt2",
            n_layers=3,
            hidden=128,
            n_heads=8,
            n_kv_heads=8,
            ffn_hidden=512,
            vocab_size=500,
            max_positions=128,
        ),
        1,
        96,
    ),
]


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
@pytest.mark.parametrize(
    "config", [SHAPES[0][0], SHAPES[2][0], SHAPES[3][0], SHAPES[4][0]], ids=lambda c: c.name
)
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
    assert memory.lora_params(gpt2, rank=1, targets="attention") == 12 * ((768 + 3 * 768) + (768 + 768))


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


def test_hf_config_refuses_a_model_without_a_shape():
    bare = llms.LLMConfig(
        name="a bare count", aliases=(), n_layers=2, hidden=8, n_params=1000, source="t", source_date="2026"
    )
    with pytest.raises(ValueError, match="a bare count.*from_hf_config"):
        llm_measure.hf_config(bare)


class _HfLoss(torch.nn.Module):
    """A transformers causal LM trained as the Trainer does: labels given, the model's own loss."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(input_ids=ids, labels=ids).loss


class _TorchtuneChunkedLoss(_HfLoss):
    """torchtune's recipe: the output projection applied per chunk of tokens (its
    ``num_output_chunks``), then ``CEWithChunkedOutputLoss``: each chunk upcast to fp32 and
    ``cross_entropy(..., reduction="sum")``, divided by the tokens counted (torchtune 0.6)."""

    chunks = 8

    def forward(self, ids):
        hidden = self.model.model(input_ids=ids).last_hidden_state
        logits = [self.model.lm_head(chunk) for chunk in hidden.chunk(self.chunks, dim=1)]
        labels = torch.cat([ids[:, 1:], torch.full_like(ids[:, :1], -100)], dim=1)
        total = sum(
            torch.nn.functional.cross_entropy(
                chunk.float().reshape(-1, chunk.shape[-1]),
                label.reshape(-1),
                ignore_index=-100,
                reduction="sum",
            )
            for chunk, label in zip(logits, labels.chunk(self.chunks, dim=1))
        )
        return total / (labels != -100).sum()


@pytest.mark.parametrize("loss_impl, wrapper", [("hf", _HfLoss), ("chunked", _TorchtuneChunkedLoss)])
def test_the_loss_peak_per_logit_is_what_a_training_step_holds(loss_impl, wrapper):
    # Two vocabularies, one model otherwise: what the step's peak gains (parameters aside) is
    # what the loss holds per logit. A LoRA-like step: one small matrix trained.
    from lab_utils import memory_measure

    batch, seq_len, peaks, predicted = 2, 128, [], []
    for vocab in (4000, 8000):
        config = small(
            "llama-3.1-8b", n_layers=1, hidden=64, n_heads=4, n_kv_heads=2, ffn_hidden=96, vocab_size=vocab
        )
        model = llm_measure.random_model(llm_measure.hf_config(config), dtype="bf16")
        for name, parameter in model.named_parameters():
            parameter.requires_grad_("layers.0.self_attn.q_proj" in name)
        tokens = torch.randint(0, vocab, (batch, seq_len))
        step = memory_measure.measure_training_step(
            wrapper(model),
            tokens,
            loss_fn=lambda loss: loss,
            optimizer=torch.optim.AdamW([p for p in model.parameters() if p.requires_grad]),
        )
        peaks.append(step.peak_bytes - step.params_bytes)
        predicted.append(
            memory.loss_bytes(config, seq_len=seq_len, batch=batch, loss_impl=loss_impl, loss_chunks=8)
        )
    assert peaks[1] - peaks[0] == pytest.approx(predicted[1] - predicted[0], rel=0.02)
