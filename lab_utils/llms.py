"""Public LLM configurations (GPT-2 to Kimi K2): the shapes memory and cost formulas need.

Read from ``lab_utils/data/llm_configs.toml``, with the source and date of each. No torch.
For the two families ``gpt2`` (GPT-2) and ``llama`` (Llama, Mistral, Qwen2: RMSNorm, rotary
positions, a gated MLP, grouped-query attention) ``n_params`` is counted from the shapes
(:func:`count_params`), exactly as ``transformers`` builds the model:

>>> get("llama-3.1-8b").n_params
8030261248
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from lab_utils import catalogs, lookup

_DATA_FILE = "llm_configs.toml"


@dataclass(frozen=True)
class LLMConfig:
    """One model's published shape. Counts are plain integers; None where unpublished.

    With a ``family`` (:data:`FAMILIES`), ``n_params`` is counted from the shapes
    (:func:`count_params`); a given count must agree with it. Without one, ``n_params`` is
    required (a mixture of experts, whose layers the count does not cover)."""

    name: str
    aliases: tuple[str, ...]
    n_layers: int
    hidden: int
    source: str
    source_date: str
    n_params: int | None = None  # counted from the shapes when ``family`` is given
    family: str | None = None  # "gpt2" or "llama"; None: a shape the count does not cover
    tied_embeddings: bool = False  # the LM head reuses the input embedding matrix
    attention_bias: bool = False  # biases on the q, k, v projections (Qwen2); GPT-2 has all biases
    max_positions: int | None = None  # context length; GPT-2 learns one embedding per position
    sliding_window: int | None = None  # attention window where the model uses one (Mistral 7B v0.1)
    n_heads: int | None = None
    n_kv_heads: int | None = None
    ffn_hidden: int | None = None
    vocab_size: int | None = None
    n_active_params: int | None = None  # mixture of experts: parameters used per token
    note: str | None = None

    def __post_init__(self):
        if self.family is not None:
            counted = count_params(self)
            if self.n_params not in (None, counted):
                raise ValueError(f"{self.name}: n_params={self.n_params!r} but its shapes count {counted}")
            object.__setattr__(self, "n_params", counted)
        elif self.n_params is None:
            raise ValueError(f"{self.name}: give n_params, or a family ({', '.join(FAMILIES)}) to count it")

    @property
    def head_dim(self) -> int | None:
        """Features per attention head: hidden / n_heads (128 for Llama and Mistral)."""
        return self.hidden // self.n_heads if self.n_heads else None

    @property
    def params_per_token(self) -> int:
        """Parameters that compute each token: the active ones for a mixture of experts."""
        return self.n_active_params or self.n_params


FAMILIES = ("gpt2", "llama")
"""Layer layouts :func:`count_params` knows: GPT-2 (LayerNorm, learned positions, fused
q/k/v with biases, 4h GELU MLP) and Llama (RMSNorm, rotary positions, separate q/k/v/o,
gated SiLU MLP); Mistral and Qwen2 are Llama layers (Qwen2 adds q/k/v biases)."""


def linear_shapes(config: LLMConfig) -> tuple[tuple[str, int, int, bool], ...]:
    """The linear layers of one block: (name, in_features, out_features, has_bias), in the
    names ``transformers`` uses (GPT-2's ``c_attn`` holds q, k and v in one matrix)."""
    h, f = config.hidden, config.ffn_hidden
    if config.family == "gpt2":
        return (
            ("c_attn", h, 3 * h, True),
            ("attn.c_proj", h, h, True),
            ("c_fc", h, f, True),
            ("mlp.c_proj", f, h, True),
        )
    q, kv, bias = config.n_heads * config.head_dim, config.n_kv_heads * config.head_dim, config.attention_bias
    return (
        ("q_proj", h, q, bias),
        ("k_proj", h, kv, bias),
        ("v_proj", h, kv, bias),
        ("o_proj", q, h, False),
        ("gate_proj", h, f, False),
        ("up_proj", h, f, False),
        ("down_proj", f, h, False),
    )


def count_params(config: LLMConfig) -> int:
    """Parameters of ``config`` counted from its shapes, as ``transformers`` builds the model:
    embeddings (and GPT-2's position embeddings), every block's linear layers and norms, the
    final norm, and the LM head unless tied to the embeddings."""
    if config.family not in FAMILIES:
        raise ValueError(f"{config.name}: family={config.family!r}; counted families: {', '.join(FAMILIES)}")
    needed = ["n_heads", "n_kv_heads", "ffn_hidden", "vocab_size"]
    needed += ["max_positions"] if config.family == "gpt2" else []
    missing = [name for name in needed if not isinstance(getattr(config, name), int)]
    if missing:
        raise ValueError(f"{config.name}: a {config.family} count needs integer {', '.join(missing)}")
    h = config.hidden
    linears = sum(n_in * n_out + (n_out if bias else 0) for _, n_in, n_out, bias in linear_shapes(config))
    norm = 2 * h if config.family == "gpt2" else h  # LayerNorm: weight and bias; RMSNorm: weight
    embeddings = config.vocab_size * h * (1 if config.tied_embeddings else 2)
    if config.family == "gpt2":
        embeddings += config.max_positions * h
    return embeddings + config.n_layers * (linears + 2 * norm) + norm


@functools.cache
def _load() -> tuple[tuple[LLMConfig, ...], dict]:
    records = catalogs.load(_DATA_FILE, "model")
    configs = tuple(LLMConfig(**dict(table, aliases=tuple(table.get("aliases", ())))) for table in records)
    return configs, catalogs.index(configs, f"lab_utils/data/{_DATA_FILE}")


def as_config(model) -> LLMConfig:
    """``model`` itself when it is an :class:`LLMConfig`, else ``get(model)`` (a catalog name)."""
    if isinstance(model, LLMConfig):
        return model
    if not isinstance(model, str):
        raise TypeError(
            f"model must be a model name from lab_utils.llms or an llms.LLMConfig, got "
            f"{type(model).__name__} {model!r}"
        )
    return get(model)


def get(name: str) -> LLMConfig:
    """One model by name or alias, forgiving case and separators: 'llama-3.1-8b', 'Llama 3.1 8B'."""
    configs, index = _load()
    return lookup.find(name, index, "LLM configurations", [c.name for c in configs])


def catalog() -> tuple[LLMConfig, ...]:
    """Every model configuration, smallest first."""
    return _load()[0]
