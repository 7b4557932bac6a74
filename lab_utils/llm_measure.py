"""Real language models from ``transformers``, built from the course's catalog shapes or a
config.json (every ``llms.SUPPORTED_MODEL_TYPES``), and the
bytes autograd saves in one of their forward passes: what ``memory.llm_activation_bytes``
predicts. torch and transformers are imported inside the functions (``pip install
'cpu-vs-gpu-course[llm]'``; Colab has both). Nothing here downloads: models are built from a
config with random weights.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from lab_utils import assumptions, checks, llms, torch_compat

__all__ = ["SavedTensor", "hf_config", "random_model", "saved_tensors"]

_LEGACY_TYPES = {"gpt2": "gpt2", "llama": "llama", "mistral": "mistral", "qwen2": "qwen2"}


def _model_type(config: llms.LLMConfig) -> str:
    """The transformers ``model_type`` whose layers match a family ``config``: its own, or for
    one made by hand, Qwen2 for q/k/v biases, Mistral for a sliding window, else Llama."""
    if config.family == "gpt2":
        return "gpt2"
    if config.model_type is not None:
        return config.model_type
    if config.attention_bias:
        return "qwen2"
    return "mistral" if config.sliding_window else "llama"


def _family_keys(config: llms.LLMConfig, kind: str) -> dict:
    """config.json keys of a family model, from its scalar fields (so a re-shaped copy builds)."""
    if kind == "gpt2":
        return dict(
            n_layer=config.n_layers,
            n_embd=config.hidden,
            n_head=config.n_heads,
            n_inner=config.ffn_hidden,
            vocab_size=config.vocab_size,
            n_positions=config.max_positions,
            tie_word_embeddings=config.tied_embeddings,
            attn_pdrop=0.0,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            bos_token_id=config.vocab_size - 1,
            eos_token_id=config.vocab_size - 1,
        )
    keys = dict(
        num_hidden_layers=config.n_layers,
        hidden_size=config.hidden,
        num_attention_heads=config.n_heads,
        num_key_value_heads=config.n_kv_heads,
        intermediate_size=config.ffn_hidden,
        vocab_size=config.vocab_size,
        max_position_embeddings=config.max_positions or 4096,
        tie_word_embeddings=config.tied_embeddings,
        head_dim=config.head_dim,
    )
    if kind in ("llama", "qwen3", "gemma3_text"):  # one flag for the q, k, v and o biases
        keys["attention_bias"] = config.output_bias
    if kind == "llama":
        keys["mlp_bias"] = config.mlp_bias
    if kind in ("mistral", "gemma3_text", "phi3"):
        keys["sliding_window"] = config.sliding_window
    if kind == "gemma3_text" and config.layer_types:
        keys["layer_types"] = [f"{layer}_attention" for layer in config.layer_types]
    return keys


def _stored_keys(config: llms.LLMConfig) -> tuple[str, dict]:
    """The model type and keys of the config.json a non-family model was read from."""
    if config.config_json is None:
        raise ValueError(
            f"model={config.name!r} has neither a family ({', '.join(llms.FAMILIES)}) nor a config.json; "
            "make it with llms.from_hf_config"
        )
    keys = json.loads(config.config_json)
    kind = keys.pop("model_type")
    if kind == "gemma3":  # the language model of a multimodal Gemma 3
        keys, kind = dict(keys["text_config"]), "gemma3_text"
        keys.pop("model_type", None)
    keys.pop("quantization_config", None)  # random weights in bf16 or fp32, not the published format
    kind = "deepseek_v3" if kind == "kimi_k2" else kind  # Kimi K2 is DeepSeek-V3's layout
    if not keys.get("sliding_window"):
        keys["sliding_window"] = None  # the catalog writes config.json's null as 0 (TOML has no null)
    return kind, keys


def hf_config(model, *, attention: str | None = None, **overrides):
    """A ``transformers`` config with the shapes of ``model`` (a catalog name, a config.json path
    or an LLMConfig: :func:`llms.resolve`), ``attn_implementation`` set to ``attention``
    ("eager" or "sdpa"; None: the ``attention`` assumption), no KV cache; ``overrides`` are
    config.json keys (e.g.
    ``num_hidden_layers=2``). GPT-2's dropout is off, as ``memory.llm_activation_bytes``
    assumes (give ``attn_pdrop`` etc. to turn it on); gpt-oss is always "eager" (transformers
    has no SDPA path for its attention sinks). A family model (GPT-2, Llama layout) is
    built from its scalar fields, any other from the config.json it was read from."""
    from transformers import AutoConfig

    config = llms.resolve(model)
    attention = assumptions.resolve(attention=attention)[0]["attention"]
    checks.choice("attention", attention, ("eager", "sdpa"))
    if config.family is not None:
        kind = _model_type(config)
        keys = _family_keys(config, kind)
    else:
        kind, keys = _stored_keys(config)
    if kind == "gpt_oss":  # transformers has no SDPA path for gpt-oss's attention sinks
        attention = "eager"
    keys.update(overrides, use_cache=False, attn_implementation=attention)
    return AutoConfig.for_model(kind, **keys)


def random_model(hf, dtype: str = "bf16"):
    """A ``transformers`` causal LM built from ``hf`` (see :func:`hf_config`) with random
    weights on the CPU, in ``dtype`` ("bf16" or "fp32"), in training mode."""
    import torch
    from transformers import AutoModelForCausalLM

    checks.choice("dtype", dtype, ("bf16", "fp32"))
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(hf)
    return model.to({"bf16": torch.bfloat16, "fp32": torch.float32}[dtype]).train()


@dataclass(frozen=True)
class SavedTensor:
    """One storage autograd saved: the shape and dtype of a tensor on it, and its size in bytes."""

    shape: tuple[int, ...]
    dtype: str
    size_bytes: int


def saved_tensors(model, input_ids) -> list[SavedTensor]:
    """The distinct storages a forward pass and its loss (labels = the input, as in causal
    language modelling) save for backward, parameters, buffers and the input left out: one
    :class:`SavedTensor` each, largest first. Their ``size_bytes`` add up to the activation
    memory. Runs the backward pass too, so that the model is left as after a step."""
    import torch

    if not isinstance(model, torch.nn.Module) or not isinstance(input_ids, torch.Tensor):
        raise TypeError("model must be a torch.nn.Module and input_ids a tensor of token ids")
    free = {
        torch_compat.storage_key(t.untyped_storage())
        for t in (*model.parameters(), *model.buffers(), input_ids)
    }
    saved = {}

    def pack(tensor):
        key = torch_compat.storage_key(tensor.untyped_storage())
        if key not in free:
            saved[key] = SavedTensor(
                tuple(tensor.shape),
                str(tensor.dtype).removeprefix("torch."),
                tensor.untyped_storage().nbytes(),
            )
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        loss = model(input_ids=input_ids, labels=input_ids).loss
    loss.backward()
    return sorted(saved.values(), key=lambda t: -t.size_bytes)
