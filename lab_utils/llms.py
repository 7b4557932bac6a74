"""Public LLM configurations (GPT-2 to Kimi K2): the shapes memory and cost formulas need, layer
by layer (:class:`Layer`: its attention, full, sliding-window or MLA latent, and its MLP, dense
or a mixture of experts), and the precision each checkpoint is published in (:class:`Checkpoint`).

The catalog, ``lab_utils/data/llm_configs.toml``, stores each model as the keys of its published
config.json, with source and date, read through :func:`from_hf_config`: the same path a learner's
own config.json takes (:func:`resolve`). Counts are exact, as ``transformers`` builds the model;
``params_per_token`` leaves out the routed experts a token does not use. No torch.

>>> get("llama-3.1-8b").n_params
8030261248
>>> qwen = get("Qwen3-30B-A3B")
>>> qwen.is_moe, qwen.layers[0].mlp.n_experts, qwen.layers[0].mlp.top_k
(True, 128, 8)
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass

from lab_utils import catalogs, hf_config, lookup
from lab_utils.hf_config import SUPPORTED_MODEL_TYPES
from lab_utils.llm_layers import (
    MLP,
    Attention,
    Checkpoint,
    Layer,
    gated_mlp_params,
    gqa_params,
    linear_params,
)

__all__ = [
    "FAMILIES",
    "MLP",
    "SUPPORTED_MODEL_TYPES",
    "Attention",
    "Checkpoint",
    "LLMConfig",
    "Layer",
    "as_config",
    "catalog",
    "count_params",
    "from_hf_config",
    "get",
    "linear_shapes",
    "resolve",
]

_DATA_FILE = "llm_configs.toml"

FAMILIES = ("gpt2", "llama")
"""Dense layouts whose layers :class:`LLMConfig` builds from its scalar fields: GPT-2
(LayerNorm, learned positions, fused q/k/v with biases, 4h GELU MLP) and Llama (RMSNorm, rotary
positions, q/k/v/o and a gated MLP), which also covers Mistral, Qwen2 (q/k/v biases), Qwen3
(q/k norms), Gemma 3 (q/k norms, four norms per block) and Phi-3 (q/k/v and gate/up fused, the
same count). Mixtures of experts and MLA models have no family: their layers are given."""


@dataclass(frozen=True)
class LLMConfig:
    """One model's published shape, its layers and its counts (plain integers).

    Three ways to make one: :func:`from_hf_config` (a config.json; the catalog does this too);
    a ``family`` and the scalar fields, from which the layers are built (``dataclasses.replace``
    of a family model with ``n_params=None`` re-counts it at a new shape); or a bare ``n_params``
    with no layers (a shape the formulas cannot see into). A given ``n_params`` must equal the
    count. ``ffn_hidden`` is the dense MLP width; for a mixture of experts, ONE routed expert's
    width (``moe_intermediate_size``; Mixtral's ``intermediate_size``): dense layers and shared
    experts are in ``layers``."""

    name: str
    aliases: tuple[str, ...]
    n_layers: int
    hidden: int
    source: str
    source_date: str
    n_params: int | None = None  # counted from the layers when they are known
    family: str | None = None  # "gpt2" or "llama" (FAMILIES); None: layers given, or none known
    tied_embeddings: bool = False  # the LM head reuses the input embedding matrix
    attention_bias: bool = False  # biases on the q, k, v projections (Qwen2); GPT-2 has all biases
    max_positions: int | None = None  # context length; GPT-2 learns one embedding per position
    sliding_window: int | None = None  # attention window of the sliding layers (Mistral 7B v0.1, Gemma 3)
    n_heads: int | None = None
    n_kv_heads: int | None = None
    ffn_hidden: int | None = None
    vocab_size: int | None = None
    n_active_params: int | None = None  # mixture of experts: parameters used per token
    note: str | None = None
    model_type: str | None = None  # config.json's model_type ("qwen3_moe", ...)
    config_head_dim: int | None = None  # config.json's head_dim; None: hidden // n_heads
    output_bias: bool = False  # a bias on the o projection (Llama's attention_bias)
    mlp_bias: bool = False  # biases on the MLP projections (Llama's mlp_bias)
    qk_norm: bool = False  # an RMSNorm over head_dim on q and on k (Qwen3, Gemma 3)
    norms_per_block: int = 2  # Gemma 3: 4 (before and after attention and MLP)
    # "full" or "sliding" per layer; (): all sliding when there is a window, else all full
    layer_types: tuple[str, ...] = ()
    layers: tuple[Layer, ...] = ()  # one per block, in order
    embedding_params: int | None = None  # input embedding (+ learned positions)
    head_params: int | None = None  # final norm + LM head (0 for the head when tied)
    checkpoint: Checkpoint | None = None  # the published checkpoint's precision
    config_json: str | None = None  # the config.json it was read from, as JSON text

    def __post_init__(self):
        if self.family is not None:
            layers, embedding, head = _family_parts(self)
            object.__setattr__(self, "layers", layers)
            object.__setattr__(self, "embedding_params", embedding)
            object.__setattr__(self, "head_params", head)
        if self.layers:
            if len(self.layers) != self.n_layers or self.embedding_params is None or self.head_params is None:
                raise ValueError(
                    f"{self.name}: {len(self.layers)} layers for n_layers={self.n_layers} (or no embedding/"
                    f"head counts); build it with llms.from_hf_config"
                )
            counted = self.embedding_params + sum(layer.params for layer in self.layers) + self.head_params
            if self.n_params not in (None, counted):
                raise ValueError(f"{self.name}: n_params={self.n_params!r} but its layers count {counted}")
            object.__setattr__(self, "n_params", counted)
            active = (
                self.embedding_params + sum(layer.active_params for layer in self.layers) + self.head_params
            )
            active = active if self.is_moe else None
            if self.n_active_params not in (None, active):
                raise ValueError(
                    f"{self.name}: n_active_params={self.n_active_params!r} but its layers count {active}"
                )
            object.__setattr__(self, "n_active_params", active)
        elif self.n_params is None:
            raise ValueError(
                f"{self.name}: give n_params, layers (llms.from_hf_config) "
                f"or a family ({', '.join(FAMILIES)})"
            )

    def __str__(self) -> str:
        return self.name

    @property
    def head_dim(self) -> int | None:
        """Features per query/key head: config.json's head_dim where it gives one (Qwen3, Gemma 3,
        gpt-oss; MLA: qk_nope_head_dim + qk_rope_head_dim), else hidden / n_heads."""
        if self.config_head_dim:
            return self.config_head_dim
        return self.hidden // self.n_heads if self.n_heads else None

    @property
    def is_moe(self) -> bool:
        """Whether any layer is a mixture of experts."""
        return any(layer.mlp.kind == "moe" for layer in self.layers)

    @property
    def params_per_token(self) -> int:
        """Parameters each token uses: ``n_params`` less the routed experts it is not sent to
        (embeddings, attention, dense and shared MLPs, routers, top-k experts per layer)."""
        return self.n_active_params or self.n_params


def _family_parts(config: LLMConfig) -> tuple[tuple[Layer, ...], int, int]:
    """The layers, embedding and head parameters of a :data:`FAMILIES` model, from its scalars."""
    if config.family not in FAMILIES:
        raise ValueError(f"{config.name}: family={config.family!r}; counted families: {', '.join(FAMILIES)}")
    needed = ["n_heads", "n_kv_heads", "ffn_hidden", "vocab_size"]
    needed += ["max_positions"] if config.family == "gpt2" else []
    missing = [name for name in needed if not isinstance(getattr(config, name), int)]
    if missing:
        raise ValueError(f"{config.name}: a {config.family} count needs integer {', '.join(missing)}")
    h, f, vocab = config.hidden, config.ffn_hidden, config.vocab_size
    heads, kv_heads, d = config.n_heads, config.n_kv_heads, config.head_dim
    if config.family == "gpt2":
        attention = linear_params(h, 3 * h, True) + linear_params(h, h, True) + 2 * 2 * h  # two LayerNorms
        mlp = linear_params(h, f, True) + linear_params(f, h, True)
        embedding, final_norm = (vocab + config.max_positions) * h, 2 * h
    else:
        norm = d if config.qk_norm else 0
        bias = config.attention_bias
        attention = gqa_params(
            h, heads, kv_heads, d, qkv_bias=bias, o_bias=config.output_bias, q_norm=norm, k_norm=norm
        )
        attention += config.norms_per_block * h
        mlp = gated_mlp_params(h, f, config.mlp_bias)
        embedding, final_norm = vocab * h, h
    kinds = config.layer_types or (("sliding" if config.sliding_window else "full"),) * config.n_layers
    if len(kinds) != config.n_layers:
        raise ValueError(
            f"{config.name}: {len(kinds)} layer_types for n_layers={config.n_layers}; give layer_types too"
        )
    layers = tuple(
        Layer(
            Attention(
                kind, heads, kv_heads, d, d, window=config.sliding_window if kind == "sliding" else None
            ),
            MLP("dense", f),
            attention,
            mlp,
            0,
        )
        for kind in kinds
    )
    return layers, embedding, final_norm + (0 if config.tied_embeddings else vocab * h)


def linear_shapes(config: LLMConfig) -> tuple[tuple[str, int, int, bool], ...]:
    """The linear layers of one block of a :data:`FAMILIES` model: (name, in_features,
    out_features, has_bias), in the names ``transformers`` uses (GPT-2's ``c_attn`` holds q, k
    and v in one matrix; Phi-3's ``qkv_proj`` and ``gate_up_proj`` fuse theirs)."""
    h, f = config.hidden, config.ffn_hidden
    if config.family == "gpt2":
        return (
            ("c_attn", h, 3 * h, True),
            ("attn.c_proj", h, h, True),
            ("c_fc", h, f, True),
            ("mlp.c_proj", f, h, True),
        )
    q, kv, bias = config.n_heads * config.head_dim, config.n_kv_heads * config.head_dim, config.attention_bias
    if config.model_type == "phi3":
        attention = (("qkv_proj", h, q + 2 * kv, False),)
        mlp = (("gate_up_proj", h, 2 * f, False),)
    else:
        attention = (("q_proj", h, q, bias), ("k_proj", h, kv, bias), ("v_proj", h, kv, bias))
        mlp = (("gate_proj", h, f, config.mlp_bias), ("up_proj", h, f, config.mlp_bias))
    return (*attention, ("o_proj", q, h, config.output_bias), *mlp, ("down_proj", f, h, config.mlp_bias))


def count_params(config: LLMConfig) -> int:
    """Parameters of a :data:`FAMILIES` model counted from its scalar shape, as ``transformers``
    builds it: embeddings (and GPT-2's position embeddings), every block's linear layers and
    norms, the final norm, and the LM head unless tied to the embeddings."""
    layers, embedding, head = _family_parts(config)
    return embedding + sum(layer.params for layer in layers) + head


def from_hf_config(
    path_or_mapping,
    *,
    name: str | None = None,
    aliases: tuple[str, ...] = (),
    source: str | None = None,
    source_date: str | None = None,
    note: str | None = None,
) -> LLMConfig:
    """A model from its Hugging Face config.json: a path to the file, a folder holding one, or
    the parsed dict. ``model_type`` must be one of :data:`SUPPORTED_MODEL_TYPES`; a missing key
    the model type needs is a ValueError naming it. ``name`` defaults to the folder's name (or
    config.json's ``_name_or_path``), ``source`` to where it came from, ``source_date`` to
    "undated". The checkpoint's precision comes from ``quantization_config`` and ``torch_dtype``.

    >>> small = from_hf_config({"model_type": "qwen3", "hidden_size": 64, "num_hidden_layers": 2,
    ...     "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 24,
    ...     "intermediate_size": 96, "vocab_size": 100, "torch_dtype": "bfloat16"})
    >>> small.head_dim, small.n_params, small.checkpoint.format
    (24, 86944, 'bf16')
    """
    data, origin = hf_config.load(path_or_mapping)
    fields = hf_config.read(data)
    if name is None:
        folder = os.path.basename(os.path.dirname(origin)) if origin.endswith("config.json") else ""
        name = str(data.get("_name_or_path") or folder or f"{fields['model_type']} model")
    config = LLMConfig(
        name=name,
        aliases=tuple(aliases),
        source=source or origin,
        source_date=source_date or "undated",
        note=note,
        config_json=json.dumps(data, sort_keys=True),
        **fields,
    )
    experts = sum(layer.routed_expert_params for layer in config.layers)
    kept = config.embedding_params + config.head_params
    return dataclasses.replace(config, checkpoint=hf_config.checkpoint(data, config.n_params, experts, kept))


def resolve(model) -> LLMConfig:
    """``model`` as an :class:`LLMConfig`: itself, a catalog name (:func:`get`), a config.json
    path or a folder holding one, a config.json dict (:func:`from_hf_config`), or
    ``"hf:<repo id>"``, read from the Hugging Face Hub where the ``huggingface_hub`` package and
    the network are there. Every ``--model`` option and every calculator's ``model`` goes
    through it."""
    if isinstance(model, LLMConfig):
        return model
    if isinstance(model, Mapping):
        return from_hf_config(model)
    if isinstance(model, os.PathLike):
        return from_hf_config(model)
    if not isinstance(model, str):
        raise TypeError(
            f"model must be a model name from lab_utils.llms, a config.json path or an llms.LLMConfig, "
            f"got {type(model).__name__} {model!r}"
        )
    if model.startswith("hf:"):
        return _from_hub(model[3:])
    if os.path.exists(model) or model.endswith(".json"):
        return from_hf_config(model)
    if "/" in model or os.sep in model:
        raise ValueError(
            f"model={model!r}: no such config.json or folder (a Hugging Face repository: write hf:{model})"
        )
    return get(model)


as_config = resolve
"""The name the calculators have always used for :func:`resolve`."""


def _from_hub(repo_id: str) -> LLMConfig:
    """config.json of ``repo_id`` from the Hugging Face Hub (huggingface_hub and the network)."""
    offline = (
        f"model='hf:{repo_id}': cannot reach the Hugging Face Hub; download its config.json and pass its path"
    )
    try:
        from huggingface_hub import hf_hub_download
    except ImportError as exc:
        raise ValueError(offline + " (huggingface_hub is not installed)") from exc
    try:
        path = hf_hub_download(repo_id, "config.json")
    except Exception as exc:  # offline, unknown repository, gated model: one line, the way out
        raise ValueError(f"{offline} ({type(exc).__name__})") from exc
    return from_hf_config(path, name=repo_id, source=f"{repo_id} config.json (Hugging Face Hub)")


@functools.cache
def _load() -> tuple[tuple[LLMConfig, ...], dict]:
    records = catalogs.load(_DATA_FILE, "model")
    configs = tuple(
        from_hf_config(
            record["config"],
            name=record["name"],
            aliases=tuple(record.get("aliases", ())),
            source=record["source"],
            source_date=record["source_date"],
            note=record.get("note"),
        )
        for record in records
    )
    return configs, catalogs.index(configs, f"lab_utils/data/{_DATA_FILE}")


def get(name: str) -> LLMConfig:
    """One model by name or alias, forgiving case and separators: 'llama-3.1-8b', 'Llama 3.1 8B'."""
    configs, index = _load()
    return lookup.find(name, index, "LLM configurations", [c.name for c in configs])


def catalog() -> tuple[LLMConfig, ...]:
    """Every model configuration, smallest first."""
    return _load()[0]
