"""A language model's blocks as data: each layer's attention (full, sliding window or MLA
latent), its MLP (dense or a mixture of experts) and the parameters of each part, counted as
``transformers`` builds them. Standard library only; :mod:`lab_utils.llms` re-exports the
classes and :mod:`lab_utils.hf_config` builds them from a config.json.

>>> attention = Attention("mla", n_heads=128, n_kv_heads=128, head_dim=192, v_head_dim=128,
...                       kv_lora_rank=512, qk_rope_head_dim=64, q_lora_rank=1536)
>>> attention.kv_values_per_token  # DeepSeek-V3's latent: 512 + 64
576
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MLP", "Attention", "Checkpoint", "Layer", "gated_mlp_params", "gqa_params", "linear_params"]

ATTENTION_KINDS = ("full", "sliding", "mla")
MLP_KINDS = ("dense", "moe")


@dataclass(frozen=True)
class Attention:
    """One layer's attention. ``kind``: "full", "sliding" (a query sees the last ``window``
    tokens) or "mla" (multi-head latent attention: the cache holds a compressed latent)."""

    kind: str
    n_heads: int  # query heads
    n_kv_heads: int  # key/value heads (MLA: n_heads, after decompression)
    head_dim: int  # per-head width of q and k (MLA: qk_nope_head_dim + qk_rope_head_dim)
    v_head_dim: int  # per-head width of v (== head_dim except MLA)
    window: int | None = None  # "sliding": tokens a query sees (config's sliding_window)
    kv_lora_rank: int | None = None  # "mla"
    qk_rope_head_dim: int | None = None  # "mla"
    q_lora_rank: int | None = None  # "mla" (None: q projected directly)

    def __post_init__(self):
        if self.kind not in ATTENTION_KINDS:
            raise ValueError(f"kind={self.kind!r}: attention kinds are {', '.join(ATTENTION_KINDS)}")
        if self.kind == "sliding" and not self.window:
            raise ValueError("a sliding-window attention needs its window (tokens)")
        if self.kind == "mla" and (self.kv_lora_rank is None or self.qk_rope_head_dim is None):
            raise ValueError("an MLA attention needs kv_lora_rank and qk_rope_head_dim")

    @property
    def kv_values_per_token(self) -> int:
        """Values one token keeps in this layer's KV cache, as vLLM lays it out: K and V per KV
        head (full, sliding), or MLA's latent plus its rotary key (576 for DeepSeek-V3)."""
        if self.kind == "mla":
            return self.kv_lora_rank + self.qk_rope_head_dim
        return self.n_kv_heads * (self.head_dim + self.v_head_dim)

    def cached_tokens(self, context_len: int) -> int:
        """Tokens this layer keeps for a sequence of ``context_len``: at most the window for a
        sliding layer (vLLM's hybrid KV-cache manager frees blocks outside it), else all."""
        return min(self.window, context_len) if self.kind == "sliding" else context_len


@dataclass(frozen=True)
class MLP:
    """One layer's MLP: "dense" (``intermediate`` wide) or "moe": ``n_experts`` routed experts of
    width ``intermediate`` each, ``top_k`` of them per token, plus shared experts of total width
    ``shared_intermediate`` that every token passes through."""

    kind: str
    intermediate: int  # dense width, or ONE routed expert's width (moe_intermediate_size)
    n_experts: int = 0  # routed experts (moe)
    top_k: int = 0  # routed experts per token (moe)
    shared_intermediate: int = 0  # total width of the shared expert(s), 0 when none

    def __post_init__(self):
        if self.kind not in MLP_KINDS:
            raise ValueError(f"kind={self.kind!r}: MLP kinds are {', '.join(MLP_KINDS)}")
        if self.kind == "moe" and not 0 < self.top_k <= self.n_experts:
            raise ValueError(f"top_k={self.top_k!r} must be 1 to n_experts={self.n_experts!r}")


@dataclass(frozen=True)
class Layer:
    """One transformer block and its parameters, split the way a mixture of experts uses them."""

    attention: Attention
    mlp: MLP
    attention_params: int  # this block's attention + its norms (everything but the MLP)
    shared_mlp_params: int  # dense MLP, or a MoE's router + shared experts (+ biases)
    expert_params: int  # ONE routed expert's parameters (0 for dense)

    @property
    def routed_expert_params(self) -> int:
        """All routed experts of this layer."""
        return self.mlp.n_experts * self.expert_params

    @property
    def params(self) -> int:
        """Every parameter of the block."""
        return self.attention_params + self.shared_mlp_params + self.routed_expert_params

    @property
    def active_params(self) -> int:
        """Parameters one token uses: the block less the routed experts it is not sent to."""
        return self.attention_params + self.shared_mlp_params + self.mlp.top_k * self.expert_params


@dataclass(frozen=True)
class Checkpoint:
    """The precision a checkpoint is published in, from its config.json's ``quantization_config``
    (bf16/fp16/fp32 from ``torch_dtype`` when there is none). Bytes per parameter include the
    scales (and zero points) that a block or group format stores beside the values."""

    format: str  # "bf16" | "fp8-block" | "mxfp4" | "int4-awq" | "int4-gptq" | "int4-ct" ...
    weight_bytes_per_param: float  # average over all parameters as stored (scales included)
    expert_bytes_per_param: float  # for routed experts (gpt-oss: MXFP4 experts)
    other_bytes_per_param: float  # everything else (gpt-oss: bf16 attention, embeddings)
    source: str  # which quantization_config fields it came from


def linear_params(n_in: int, n_out: int, bias: bool = False) -> int:
    """An ``nn.Linear(n_in, n_out)``: its weight and, with ``bias``, its bias."""
    return n_in * n_out + (n_out if bias else 0)


def gated_mlp_params(hidden: int, intermediate: int, bias: bool = False) -> int:
    """A gated MLP (gate, up and down projections; Phi-3 fuses gate and up, same count)."""
    return 2 * linear_params(hidden, intermediate, bias) + linear_params(intermediate, hidden, bias)


def gqa_params(
    hidden: int,
    n_heads: int,
    n_kv_heads: int,
    head_dim: int,
    *,
    qkv_bias: bool = False,
    o_bias: bool = False,
    q_norm: int = 0,
    k_norm: int = 0,
) -> int:
    """Grouped-query attention: q, k, v and o projections (biases as given) and the q/k norm
    weights (``q_norm``/``k_norm`` values each: head_dim for Qwen3, Gemma 3, GLM-4.5)."""
    q, kv = n_heads * head_dim, n_kv_heads * head_dim
    return (
        linear_params(hidden, q, qkv_bias)
        + 2 * linear_params(hidden, kv, qkv_bias)
        + linear_params(q, hidden, o_bias)
        + q_norm
        + k_norm
    )
