"""A model's config.json, read into the fields of an ``llms.LLMConfig``: its layers as
``transformers`` builds them (:mod:`lab_utils.llm_layers`) and the precision its checkpoint is
published in (``quantization_config``). Standard library only: :func:`lab_utils.llms.from_hf_config`
is the public entry.

Keys a model type cannot do without (``hidden_size``, ``num_hidden_layers``, ...) are required:
a ValueError names the missing one. Keys transformers gives a default for take that default
(``num_key_value_heads``: the query heads; ``tie_word_embeddings``: the model type's).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

from lab_utils.llm_layers import (
    MLP,
    Attention,
    Checkpoint,
    Layer,
    gated_mlp_params,
    gqa_params,
    linear_params,
)

DENSE_TYPES = ("llama", "mistral", "qwen2", "qwen3", "gemma3_text", "phi3")
"""Model types whose blocks are all alike but for sliding windows: ``llms.LLMConfig`` builds
their layers from its scalar fields (family "llama")."""

SUPPORTED_MODEL_TYPES = (
    "gpt2",
    *DENSE_TYPES,
    "gemma3",
    "mixtral",
    "qwen2_moe",
    "qwen3_moe",
    "olmoe",
    "gpt_oss",
    "deepseek_v2",
    "deepseek_v3",
    "kimi_k2",
    "glm4_moe",
)
"""config.json ``model_type`` values :func:`read` knows. gemma3 is read through its
``text_config`` (the language model; the vision tower is not counted); kimi_k2 is DeepSeek-V3's
layout (transformers builds it as deepseek_v3)."""

_HEAD_DIM_DEFAULTS = {"qwen3": 128, "gemma3_text": 256, "gpt_oss": 64}  # transformers' class defaults
_TIED_DEFAULTS = {"gpt2": True, "gemma3_text": True}
_SLIDING_DEFAULTS = {"mistral": 4096, "gemma3_text": 4096, "gpt_oss": 128}
_QWEN_TYPES = ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe")
_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
_DTYPE_NAMES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def load(path_or_mapping) -> tuple[dict, str]:
    """The config.json as a dict and where it came from: a mapping, a config.json file, or a
    folder holding one."""
    if isinstance(path_or_mapping, Mapping):
        return dict(path_or_mapping), "a config.json mapping"
    if not isinstance(path_or_mapping, (str, os.PathLike)):
        raise TypeError(
            f"path_or_mapping must be a config.json path, a folder holding one, or a dict, got "
            f"{type(path_or_mapping).__name__}"
        )
    path = Path(path_or_mapping)
    if path.is_dir():
        path = path / "config.json"
    if not path.is_file():
        raise ValueError(f"path_or_mapping={str(path_or_mapping)!r}: no such config.json file or folder")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not a readable JSON config ({exc})") from exc
    return parse(text, str(path)), str(path)


def parse(text: str, origin: str) -> dict:
    """The JSON object of a config.json's ``text`` (a file's, or one pasted into a calculator);
    anything else is a one-line ValueError that starts with ``origin``."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{origin}: not a readable JSON config ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{origin}: a config.json holds a JSON object, got {type(data).__name__}")
    return data


class _Keys:
    """config.json keys with errors that name the missing or malformed key."""

    def __init__(self, data: dict, model_type: str):
        self.data, self.model_type = data, model_type

    def need(self, key: str) -> int:
        value = self.data.get(key)
        if value is None:
            raise ValueError(f"config.json lacks {key} (needed for model_type {self.model_type!r})")
        return self._int(key, value)

    def get(self, key: str, default):
        value = self.data.get(key)
        return default if value is None else value

    def int_or(self, key: str, default: int | None) -> int | None:
        value = self.data.get(key)
        return default if value is None else self._int(key, value)

    @staticmethod
    def _int(key, value) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"config.json: {key}={value!r} must be a non-negative integer")
        return value


def read(data: dict) -> dict:
    """The ``llms.LLMConfig`` fields of config.json ``data`` (no name or source)."""
    if data.get("model_type") == "gemma3" and isinstance(data.get("text_config"), Mapping):
        text = data["text_config"]
        dtype = text.get("torch_dtype") or data.get("torch_dtype") or data.get("dtype")
        data = {
            **text,
            "model_type": "gemma3_text",
            "torch_dtype": dtype,
            "quantization_config": data.get("quantization_config"),
        }
    model_type = data.get("model_type")
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise ValueError(
            f"config.json model_type={model_type!r} is not supported; "
            f"supported: {', '.join(SUPPORTED_MODEL_TYPES)}"
        )
    keys = _Keys(data, model_type)
    if model_type == "gpt2":
        fields = _gpt2(keys)
    else:
        fields = _common(keys)
        fields.update(_dense(keys, fields) if model_type in DENSE_TYPES else _layers(keys, fields))
    fields["model_type"] = model_type
    return fields


def _gpt2(keys: _Keys) -> dict:
    h = keys.need("n_embd")
    return dict(
        family="gpt2",
        n_layers=keys.need("n_layer"),
        hidden=h,
        n_heads=keys.need("n_head"),
        n_kv_heads=keys.need("n_head"),
        ffn_hidden=keys.int_or("n_inner", 4 * h),
        vocab_size=keys.need("vocab_size"),
        max_positions=keys.need("n_positions"),
        tied_embeddings=bool(keys.get("tie_word_embeddings", True)),
        attention_bias=True,
    )


def _common(keys: _Keys) -> dict:
    """The scalar fields every non-GPT-2 type shares."""
    h, heads = keys.need("hidden_size"), keys.need("num_attention_heads")
    model_type = keys.model_type
    vocab = keys.int_or("vocab_size", 262208) if model_type == "gemma3_text" else keys.need("vocab_size")
    return dict(
        n_layers=keys.need("num_hidden_layers"),
        hidden=h,
        n_heads=heads,
        n_kv_heads=keys.int_or("num_key_value_heads", heads),
        config_head_dim=_head_dim(keys, h, heads),
        vocab_size=vocab,
        max_positions=keys.int_or("max_position_embeddings", None),
        tied_embeddings=bool(keys.get("tie_word_embeddings", _TIED_DEFAULTS.get(model_type, False))),
    )


def _head_dim(keys: _Keys, hidden: int, heads: int) -> int | None:
    """config.json's head_dim (or the model type's default), None where it is hidden / heads."""
    head_dim = keys.int_or("head_dim", _HEAD_DIM_DEFAULTS.get(keys.model_type, hidden // heads))
    return None if head_dim == hidden // heads else head_dim


def _window_layers(keys: _Keys, n_layers: int) -> tuple[int | None, tuple[str, ...]]:
    """The sliding window and each layer's attention kind ("full" or "sliding"), as the model
    type's transformers config lays them out."""
    model_type = keys.model_type
    if model_type in _QWEN_TYPES:  # sliding only when asked, from layer max_window_layers on
        window = keys.int_or("sliding_window", None) if keys.get("use_sliding_window", False) else None
        first = keys.int_or("max_window_layers", n_layers)
        return window, tuple("sliding" if window and i >= first else "full" for i in range(n_layers))
    window = keys.int_or("sliding_window", _SLIDING_DEFAULTS.get(model_type))
    if not window:
        return None, ("full",) * n_layers
    given = keys.get("layer_types", None)
    if isinstance(given, list) and len(given) == n_layers:
        return window, tuple("sliding" if kind == "sliding_attention" else "full" for kind in given)
    pattern = {"gemma3_text": keys.int_or("sliding_window_pattern", 6), "gpt_oss": 2}.get(model_type)
    if pattern is None:  # Mistral, Mixtral, Phi-3: every layer slides
        return window, ("sliding",) * n_layers
    return window, tuple("sliding" if (i + 1) % pattern else "full" for i in range(n_layers))


def _dense(keys: _Keys, fields: dict) -> dict:
    """A dense model's scalar layout; ``llms.LLMConfig`` builds its layers from them."""
    model_type = keys.model_type
    bias = bool(keys.get("attention_bias", False))
    window, layer_types = _window_layers(keys, fields["n_layers"])
    return dict(
        family="llama",
        ffn_hidden=keys.need("intermediate_size"),
        attention_bias=True if model_type == "qwen2" else bias and model_type != "mistral",
        output_bias=bias and model_type in ("llama", "qwen3", "gemma3_text"),
        mlp_bias=bool(keys.get("mlp_bias", False)) and model_type == "llama",
        qk_norm=model_type in ("qwen3", "gemma3_text"),
        norms_per_block=4 if model_type == "gemma3_text" else 2,
        sliding_window=window,
        layer_types=() if set(layer_types) == {"sliding" if window else "full"} else layer_types,
    )


def _layers(keys: _Keys, fields: dict) -> dict:
    """A mixture of experts or an MLA model: its layers, one by one, and the parts around them."""
    model_type = "deepseek_v3" if keys.model_type == "kimi_k2" else keys.model_type
    h, n_layers = fields["hidden"], fields["n_layers"]
    window, layer_types = _window_layers(keys, n_layers)
    attention, attention_params, bias = _attention(keys, fields, model_type)
    layers, ffn_hidden = [], keys.int_or("intermediate_size", None)
    for index, kind in enumerate(layer_types):
        parts = _moe(keys, model_type, index, h)
        if parts is None:  # a dense layer
            width = keys.need("intermediate_size")
            bias = model_type == "deepseek_v2" and bool(keys.get("mlp_bias", False))
            parts = MLP("dense", width), gated_mlp_params(h, width, bias), 0
        mlp, shared, expert = parts
        if mlp.kind == "moe":
            ffn_hidden = mlp.intermediate
        layer_attention = attention
        if kind == "sliding" and attention.kind != "mla":
            layer_attention = dataclasses.replace(attention, kind="sliding", window=window)
        layers.append(Layer(layer_attention, mlp, attention_params + 2 * h, shared, expert))
    vocab = fields["vocab_size"]
    return dict(
        family=None,
        ffn_hidden=ffn_hidden,
        attention_bias=bias,
        sliding_window=window,
        layer_types=layer_types,
        layers=tuple(layers),
        embedding_params=vocab * h,
        head_params=h + (0 if fields["tied_embeddings"] else vocab * h),
    )


def _attention(keys: _Keys, fields: dict, model_type: str) -> tuple[Attention, int, bool]:
    """One layer's attention, its parameters (norms of the block apart) and whether q/k/v have
    biases."""
    h, heads, kv_heads = fields["hidden"], fields["n_heads"], fields["n_kv_heads"]
    d = fields["config_head_dim"] or h // heads
    bias = bool(keys.get("attention_bias", False))
    if model_type in ("deepseek_v2", "deepseek_v3"):
        return _mla(keys, fields, bias)
    if model_type == "mixtral":
        params = gqa_params(h, heads, kv_heads, d)
    elif model_type == "qwen2_moe":
        bias = bool(keys.get("qkv_bias", True))
        params = gqa_params(h, heads, kv_heads, d, qkv_bias=bias)
    elif model_type == "qwen3_moe":
        params = gqa_params(h, heads, kv_heads, d, qkv_bias=bias, o_bias=bias, q_norm=d, k_norm=d)
    elif model_type == "olmoe":  # q/k norms over all heads: hidden, and the KV width by hidden // heads
        d = h // heads
        params = gqa_params(h, heads, kv_heads, d, qkv_bias=bias, o_bias=bias, q_norm=h, k_norm=d * kv_heads)
    elif model_type == "gpt_oss":  # biases default on; one attention sink per head
        bias = bool(keys.get("attention_bias", True))
        params = gqa_params(h, heads, kv_heads, d, qkv_bias=bias, o_bias=bias) + heads
    else:  # glm4_moe: q/k/v biases, q/k norms when use_qk_norm
        norm = d if keys.get("use_qk_norm", False) else 0
        params = gqa_params(h, heads, kv_heads, d, qkv_bias=bias, q_norm=norm, k_norm=norm)
    fields["config_head_dim"] = None if d == h // heads else d
    return Attention("full", heads, kv_heads, d, d), params, bias


def _mla(keys: _Keys, fields: dict, bias: bool) -> tuple[Attention, int, bool]:
    """DeepSeek's multi-head latent attention: q directly or through a rank-q_lora_rank
    bottleneck (with its norm), k/v through a kv_lora_rank latent (with its norm) plus a shared
    rotary key, and o."""
    h, heads = fields["hidden"], fields["n_heads"]
    if "q_lora_rank" not in keys.data:
        keys.need("q_lora_rank")  # present, if null: the key says whether q has a bottleneck
    q_rank, kv_rank = keys.int_or("q_lora_rank", None), keys.need("kv_lora_rank")
    rope, nope, v = keys.need("qk_rope_head_dim"), keys.need("qk_nope_head_dim"), keys.need("v_head_dim")
    qk = nope + rope
    if q_rank is None:
        q = linear_params(h, heads * qk)
    else:
        q = linear_params(h, q_rank, bias) + q_rank + linear_params(q_rank, heads * qk)
    kv = linear_params(h, kv_rank + rope, bias) + kv_rank + linear_params(kv_rank, heads * (nope + v))
    params = q + kv + linear_params(heads * v, h, bias)
    fields.update(n_kv_heads=heads, config_head_dim=qk)
    attention = Attention(
        "mla", heads, heads, qk, v, kv_lora_rank=kv_rank, qk_rope_head_dim=rope, q_lora_rank=q_rank
    )
    return attention, params, bias


def _moe(keys: _Keys, model_type: str, index: int, h: int) -> tuple[MLP, int, int] | None:
    """Layer ``index``'s mixture of experts: (MLP, router + shared parameters, one routed
    expert's parameters), or None where the model type puts a dense MLP."""
    if model_type in ("qwen2_moe", "qwen3_moe"):
        experts = _experts(keys)
        step = keys.int_or("decoder_sparse_step", 1) or 1
        if index in keys.get("mlp_only_layers", []) or experts == 0 or (index + 1) % step:
            return None
        width, top_k = keys.need("moe_intermediate_size"), keys.need("num_experts_per_tok")
        shared_width = keys.need("shared_expert_intermediate_size") if model_type == "qwen2_moe" else 0
        shared = h * experts + (
            gated_mlp_params(h, shared_width) + h if shared_width else 0
        )  # + the shared gate
        return MLP("moe", width, experts, top_k, shared_width), shared, gated_mlp_params(h, width)
    if model_type in ("deepseek_v2", "deepseek_v3", "glm4_moe"):
        first_dense = {"deepseek_v2": 0, "deepseek_v3": 3, "glm4_moe": 1}[model_type]
        if index < keys.int_or("first_k_dense_replace", first_dense):
            return None
        experts, top_k = _experts(keys), keys.need("num_experts_per_tok")
        width = keys.need("moe_intermediate_size")
        shared_width = width * keys.int_or("n_shared_experts", 2 if model_type == "deepseek_v2" else 1)
        bias = model_type == "deepseek_v2" and bool(keys.get("mlp_bias", False))
        shared = h * experts + gated_mlp_params(h, shared_width, bias)
        return (
            MLP("moe", width, experts, top_k, shared_width),
            shared,
            gated_mlp_params(h, width),
        )  # no biases
    experts, top_k, width = _experts(keys), keys.need("num_experts_per_tok"), keys.need("intermediate_size")
    if model_type == "gpt_oss":  # router and experts with biases
        return (
            MLP("moe", width, experts, top_k),
            h * experts + experts,
            gated_mlp_params(h, width) + 2 * width + h,
        )
    return MLP("moe", width, experts, top_k), h * experts, gated_mlp_params(h, width)


_EXPERT_KEYS = ("n_routed_experts", "num_local_experts", "num_experts")  # the names model types use


def _experts(keys: _Keys) -> int:
    """Routed experts per MoE layer, under whichever name the model type gives them."""
    for key in _EXPERT_KEYS:
        if keys.data.get(key) is not None:
            return keys.need(key)
    usual = {"deepseek_v2": 0, "deepseek_v3": 0, "kimi_k2": 0, "glm4_moe": 0, "mixtral": 1, "gpt_oss": 1}
    return keys.need(_EXPERT_KEYS[usual.get(keys.model_type, 2)])


# --- the checkpoint's precision ------------------------------------------------------------


def checkpoint(data: dict, n_params: int, expert_params: int, kept: int) -> Checkpoint | None:
    """The stored precision of a checkpoint of ``n_params`` parameters, ``expert_params`` of them
    in routed experts, ``kept`` of the others (the embeddings and the LM head) in ``torch_dtype``
    whatever the format. Norms, biases and routers are counted with the matrices of their layer
    (under 0.1% of the parameters of every catalog model).

    - no ``quantization_config``: ``torch_dtype`` (or ``dtype``) for every parameter, None if absent;
    - ``quant_method`` "fp8" with ``weight_block_size`` [a, b]: one byte per weight and one fp32
      scale per a x b block, on every linear layer of the blocks (DeepSeek-AI, "DeepSeek-V3
      Technical Report", arXiv 2412.19437, 2024-12: 128 x 128 blocks; Kimi K2 the same);
    - "mxfp4" (gpt-oss): the routed experts' matrices in MXFP4, 4 bits per value and one 8-bit
      scale per 32 values, 4.25 bits (Open Compute Project, "OCP Microscaling Formats (MX)
      Specification" v1.0, 2023-09); the rest bf16 (``modules_to_not_convert``: attention,
      router, embeddings, head);
    - "awq" and "gptq": ``bits`` per weight and, per ``group_size`` weights, one fp16 scale and
      one packed ``bits``-wide zero point, on the blocks' linear layers (the layouts of AutoAWQ
      and AutoGPTQ for Lin et al., arXiv 2306.00978, and Frantar et al., arXiv 2210.17323);
    - "compressed-tensors": its first config group's ``num_bits`` and ``group_size`` with a bf16
      scale per group, on the linear layers its ``ignore`` list does not name (the attention's
      entry decides for every non-expert layer) (vLLM's llm-compressor format).
    """
    base_name = data.get("torch_dtype") or data.get("dtype")
    base = _BYTES.get(base_name, 2)
    quant = data.get("quantization_config")
    if not isinstance(quant, Mapping):
        if base_name not in _BYTES:
            return None
        name = _DTYPE_NAMES[base_name]
        return Checkpoint(name, base, base, base, f"torch_dtype={base_name!r}, no quantization_config")
    method = quant.get("quant_method")
    matrices = n_params - expert_params - kept
    expert_quantized = other_quantized = True
    if method == "fp8":
        block = quant.get("weight_block_size") or [0, 0]
        scale = 4 / (block[0] * block[1]) if all(block) else 0.0
        fmt, quantized = ("fp8-block" if all(block) else "fp8"), 1 + scale
        source = f"quant_method='fp8', weight_block_size={list(block)}"
    elif method == "mxfp4":
        fmt, quantized, other_quantized = "mxfp4", 4.25 / 8, False
        source = "quant_method='mxfp4', modules_to_not_convert"
    elif method in ("awq", "gptq"):
        bits = quant.get("bits") or quant.get("w_bit") or 4
        group = quant.get("group_size") or quant.get("q_group_size") or 128
        group = group if group > 0 else data.get("hidden_size", 4096)  # -1: one scale per output row
        fmt, quantized = f"int{bits}-{method}", bits / 8 + (2 + bits / 8) / group
        source = f"quant_method={method!r}, bits={bits}, group_size={quant.get('group_size', group)}"
    elif method == "compressed-tensors":
        weights = next(iter((quant.get("config_groups") or {}).values()), {}).get("weights") or {}
        bits, group = weights.get("num_bits", 8), weights.get("group_size") or data.get("hidden_size", 4096)
        kind = "int" if weights.get("type", "int") == "int" else "fp"
        fmt, quantized = f"{kind}{bits}-ct", bits / 8 + 2 / group
        ignored = [str(entry) for entry in quant.get("ignore") or []]
        other_quantized = not _ignored(ignored, "model.layers.1.self_attn.q_proj")
        expert_quantized = not _ignored(ignored, "model.layers.1.mlp.experts.0.gate_proj")
        source = f"quant_method='compressed-tensors', num_bits={bits}, group_size={group}, ignore={ignored}"
    else:
        raise ValueError(
            f"config.json quantization_config quant_method={method!r} is not supported; supported: "
            "fp8, mxfp4, awq, gptq, compressed-tensors"
        )
    expert = quantized if expert_quantized else base
    other = (matrices * (quantized if other_quantized else base) + kept * base) / max(
        n_params - expert_params, 1
    )
    average = (expert * expert_params + other * (n_params - expert_params)) / n_params
    return Checkpoint(fmt, average, expert if expert_params else other, other, source)


def _ignored(patterns: list[str], module: str) -> bool:
    """Whether compressed-tensors' ``ignore`` list names ``module`` ("re:" entries are regexes)."""
    for pattern in patterns:
        if pattern.startswith("re:") and re.match(pattern[3:], module):
            return True
        if module == pattern or module.endswith("." + pattern):
            return True
    return False
