"""Small reference models shared by the notebooks: an MLP, a tiny GPT and a tiny mixture of
experts (imports torch).

Small enough to train on a laptop CPU in seconds, built from the same parts as real language
models, so what a notebook measures on them (FLOPs, memory, tokens/s) scales by formula to
the models in ``lab_utils/data/llm_configs.toml``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from lab_utils import roofline


@dataclass(frozen=True)
class GPTConfig:
    """Shape of a :class:`TinyGPT`. Sizes in tokens and features."""

    vocab_size: int = 256  # bytes: any text is a valid input, no tokenizer to download
    seq_len: int = 64  # longest context, in tokens
    n_layers: int = 2
    hidden: int = 64
    n_heads: int = 4

    def __post_init__(self):
        for name in ("vocab_size", "seq_len", "n_layers", "hidden", "n_heads"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r}: must be a positive integer")
        if self.hidden % self.n_heads:
            raise ValueError(f"hidden={self.hidden} must be divisible by n_heads={self.n_heads}")

    @property
    def n_params(self) -> int:
        """Parameter count: h·v (tied embedding) + s·h (positions) + L·(12h² + 13h) + 2h (final norm).

        The per-layer term is the Ultra-Scale Playbook's count for a GPT block.
        """
        h = self.hidden
        return h * self.vocab_size + self.seq_len * h + self.n_layers * (12 * h * h + 13 * h) + 2 * h


class MLP(nn.Module):
    """Linear layers with GELU between them: sizes (in, hidden..., out)."""

    def __init__(self, sizes):
        super().__init__()
        sizes = list(sizes)
        if len(sizes) < 2 or any(not isinstance(s, int) or s < 1 for s in sizes):
            raise ValueError(f"sizes={sizes!r}: give at least two positive integers (in, ..., out)")
        layers = []
        for index, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
            layers.append(nn.Linear(n_in, n_out))
            if index < len(sizes) - 2:
                layers.append(nn.GELU())
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        return self.layers(x)

    def forward_flops(self, batch: int) -> int:
        """FLOPs of one forward pass of ``batch`` rows: each linear layer's matrix product, 2 x
        batch x in x out (``roofline.matmul_flops``); biases and GELUs left out (FlopCounterMode
        counts the same: tests/test_forward_flops.py)."""
        return sum(
            roofline.matmul_flops(batch, layer.out_features, layer.in_features)
            for layer in self.layers
            if isinstance(layer, nn.Linear)
        )


class CausalSelfAttention(nn.Module):
    """Multi-head attention that only looks back; written out so every saved tensor is visible."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.n_heads = config.n_heads
        self.qkv = nn.Linear(config.hidden, 3 * config.hidden)
        self.proj = nn.Linear(config.hidden, config.hidden)
        mask = torch.tril(torch.ones(config.seq_len, config.seq_len, dtype=torch.bool))
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x):
        batch, seq, hidden = x.shape
        head_dim = hidden // self.n_heads
        q, k, v = self.qkv(x).split(hidden, dim=2)
        q, k, v = (t.view(batch, seq, self.n_heads, head_dim).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(head_dim)
        scores = scores.masked_fill(~self.mask[:seq, :seq], float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(batch, seq, hidden))

    def cached(self, x, past):
        """Attention of the new positions ``x`` (batch, new, hidden) to themselves and to the
        ``past`` keys and values (a (k, v) pair, or None): returns (output, (k, v) so far)."""
        batch, seq, hidden = x.shape
        head_dim = hidden // self.n_heads
        q, k, v = (
            t.view(batch, seq, self.n_heads, head_dim).transpose(1, 2)
            for t in self.qkv(x).split(hidden, dim=2)
        )
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        start = k.shape[2] - seq
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(head_dim)
        scores = scores.masked_fill(~self.mask[start : start + seq, : start + seq], float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(batch, seq, hidden)), (k, v)


class Block(nn.Module):
    """One pre-norm transformer block: x + attention(norm(x)), then x + MLP(norm(x))."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.norm1 = nn.LayerNorm(config.hidden)
        self.attention = CausalSelfAttention(config)
        self.norm2 = nn.LayerNorm(config.hidden)
        self.mlp = MLP([config.hidden, 4 * config.hidden, config.hidden])

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))

    def cached(self, x, past):
        """The block on new positions with the attention's KV cache: (output, new cache)."""
        attended, past = self.attention.cached(self.norm1(x), past)
        x = x + attended
        return x + self.mlp(self.norm2(x)), past


class TinyGPT(nn.Module):
    """A GPT-style decoder: token and position embeddings, blocks, a tied output layer.

    ``forward(tokens)`` takes int64 token ids of shape (batch, seq) and returns logits of
    shape (batch, seq, vocab_size).
    """

    block_type = Block

    def __init__(self, config: GPTConfig = GPTConfig()):
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise TypeError(f"config must be a GPTConfig, got {type(config).__name__}")
        self.config = config
        self.token_embedding = nn.Embedding(config.vocab_size, config.hidden)
        self.position_embedding = nn.Embedding(config.seq_len, config.hidden)
        self.blocks = nn.ModuleList(self.block_type(config) for _ in range(config.n_layers))
        self.norm = nn.LayerNorm(config.hidden)
        # GPT-2's initialisation: small embeddings, so the tied output layer starts near a
        # uniform guess (loss about ln(vocab_size)) instead of tens of nats.
        for embedding in (self.token_embedding, self.position_embedding):
            nn.init.normal_(embedding.weight, std=0.02)

    def forward(self, tokens):
        if tokens.dim() != 2:
            raise ValueError(f"tokens must have shape (batch, seq), got {tuple(tokens.shape)}")
        seq = tokens.shape[1]
        if seq > self.config.seq_len:
            raise ValueError(f"sequence length {seq} exceeds config.seq_len={self.config.seq_len}")
        positions = torch.arange(seq, device=tokens.device)
        x = self.token_embedding(tokens) + self.position_embedding(positions)
        for block in self.blocks:
            x = block(x)
        return self.norm(x) @ self.token_embedding.weight.T  # tied output layer

    def prefill(self, tokens):
        """Read the prompts ``tokens`` (batch, seq) at once: (logits of the next token (batch,
        vocab), the KV cache: one (keys, values) pair per block)."""
        return self._cached(tokens, [None] * len(self.blocks), start=0)

    def decode(self, tokens, cache):
        """One decode step: ``tokens`` (batch, 1), the newest token of each sequence, attends to
        ``cache``; returns (logits of the next token, the cache one position longer)."""
        return self._cached(tokens, cache, start=cache[0][0].shape[2])

    def _cached(self, tokens, cache, start):
        if tokens.dim() != 2:
            raise ValueError(f"tokens must have shape (batch, seq), got {tuple(tokens.shape)}")
        end = start + tokens.shape[1]
        if end > self.config.seq_len:
            raise ValueError(f"{end} positions exceed config.seq_len={self.config.seq_len}")
        x = self.token_embedding(tokens) + self.position_embedding(
            torch.arange(start, end, device=tokens.device)
        )
        new_cache = []
        for block, past in zip(self.blocks, cache):
            x, past = block.cached(x, past)
            new_cache.append(past)
        return self.norm(x[:, -1]) @ self.token_embedding.weight.T, new_cache

    @torch.no_grad()
    def generate(self, tokens, max_new_tokens: int):
        """Greedy generation with a KV cache: prefill ``tokens`` (batch, seq), then
        ``max_new_tokens`` decode steps that each read the cache instead of re-reading the
        prompt. Returns (batch, seq + max_new_tokens) token ids."""
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens={max_new_tokens!r}: must be a positive integer")
        if tokens.shape[-1] + max_new_tokens - 1 > self.config.seq_len:
            raise ValueError(
                f"max_new_tokens={max_new_tokens}: prompt {tokens.shape[-1]} + new tokens exceed "
                f"config.seq_len={self.config.seq_len}"
            )
        logits, cache = self.prefill(tokens)
        out = [tokens]
        for step in range(max_new_tokens):
            out.append(logits.argmax(dim=-1, keepdim=True))
            if step < max_new_tokens - 1:
                logits, cache = self.decode(out[-1], cache)
        return torch.cat(out, dim=1)


@dataclass(frozen=True)
class MoEConfig(GPTConfig):
    """Shape of a :class:`TinyMoE`: a :class:`GPTConfig` whose blocks' MLP is a mixture of
    ``n_experts`` routed experts (each hidden -> ``expert_hidden`` -> hidden, GELU), of which a
    router picks ``top_k`` per token, beside ``n_shared`` shared experts every token uses."""

    n_experts: int = 8
    top_k: int = 2
    expert_hidden: int = 128
    n_shared: int = 1

    def __post_init__(self):
        super().__post_init__()
        for name in ("n_experts", "top_k", "expert_hidden"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r}: must be a positive integer")
        if isinstance(self.n_shared, bool) or not isinstance(self.n_shared, int) or self.n_shared < 0:
            raise ValueError(f"n_shared={self.n_shared!r}: must be an integer >= 0")
        if self.top_k > self.n_experts:
            raise ValueError(f"top_k={self.top_k} must not exceed n_experts={self.n_experts}")

    @property
    def expert_params(self) -> int:
        """One expert's parameters: two linear layers with their biases, 2·h·f + f + h."""
        h, f = self.hidden, self.expert_hidden
        return 2 * h * f + f + h

    @property
    def n_params(self) -> int:
        """Every parameter: embeddings, per block two LayerNorms (4h), attention (4h² + 4h), the
        router (h·E, no bias), E routed and the shared experts, and the final norm (2h)."""
        h = self.hidden
        block = (
            4 * h
            + 4 * h * h
            + 4 * h
            + h * self.n_experts
            + (self.n_experts + self.n_shared) * self.expert_params
        )
        return h * self.vocab_size + self.seq_len * h + self.n_layers * block + 2 * h

    @property
    def params_per_token(self) -> int:
        """Parameters one token uses: all but the n_experts - top_k routed experts it skips."""
        return self.n_params - self.n_layers * (self.n_experts - self.top_k) * self.expert_params


class MoEMLP(nn.Module):
    """A mixture of experts in place of a block's MLP: a linear router scores the experts, each
    token goes to its ``top_k`` best (their scores softmaxed among them weigh the outputs), and
    the shared experts see every token. Only the experts some token picked run, so a step reads
    the weights of the experts its tokens touch (what ``basics.experts_touched`` predicts)."""

    def __init__(self, config: MoEConfig):
        super().__init__()
        h, f = config.hidden, config.expert_hidden
        self.top_k = config.top_k
        self.router = nn.Linear(h, config.n_experts, bias=False)
        self.experts = nn.ModuleList(MLP([h, f, h]) for _ in range(config.n_experts))
        self.shared = nn.ModuleList(MLP([h, f, h]) for _ in range(config.n_shared))

    def forward(self, x):
        tokens = x.reshape(-1, x.shape[-1])
        scores, chosen = self.router(tokens).topk(self.top_k, dim=-1)
        weights = torch.softmax(scores, dim=-1)
        out = sum((expert(tokens) for expert in self.shared), torch.zeros_like(tokens))
        for index in chosen.unique().tolist():
            rows, slot = (chosen == index).nonzero(as_tuple=True)
            out = out.index_add(0, rows, weights[rows, slot, None] * self.experts[index](tokens[rows]))
        return out.reshape(x.shape)

    def experts_used(self, x) -> int:
        """How many routed experts the tokens ``x`` (..., hidden) touch."""
        with torch.no_grad():
            return self.router(x.reshape(-1, x.shape[-1])).topk(self.top_k, dim=-1)[1].unique().numel()


class MoEBlock(Block):
    """A transformer block whose MLP is a :class:`MoEMLP`."""

    def __init__(self, config: MoEConfig):
        super().__init__(config)
        self.mlp = MoEMLP(config)


class TinyMoE(TinyGPT):
    """A :class:`TinyGPT` whose blocks are mixtures of experts (:class:`MoEBlock`): the same
    embeddings, attention, KV cache and tied output layer; ``config`` a :class:`MoEConfig`."""

    block_type = MoEBlock

    def __init__(self, config: MoEConfig = MoEConfig()):
        if not isinstance(config, MoEConfig):
            raise TypeError(f"config must be a MoEConfig, got {type(config).__name__}")
        super().__init__(config)


def llm_config(config: GPTConfig):
    """``config`` as an ``llms.LLMConfig`` for the serving bounds (``lab_utils.serving``): its
    layers with the parameters each token multiplies (the blocks' matrices and the tied output
    layer; no position table, norms or biases), so the bound stays a lower bound. A
    :class:`MoEConfig` gives mixture-of-experts layers: the router and shared experts beside
    ``n_experts`` routed ones, ``top_k`` per token."""
    from lab_utils import llms

    h, heads = config.hidden, config.n_heads
    attention = llms.Attention(
        kind="full", n_heads=heads, n_kv_heads=heads, head_dim=h // heads, v_head_dim=h // heads
    )
    if isinstance(config, MoEConfig):
        f = config.expert_hidden
        mlp = llms.MLP(
            kind="moe",
            intermediate=f,
            n_experts=config.n_experts,
            top_k=config.top_k,
            shared_intermediate=config.n_shared * f,
        )
        layer = llms.Layer(
            attention, mlp, 4 * h * h, h * config.n_experts + config.n_shared * 2 * h * f, 2 * h * f
        )
        kind = f"tiny MoE ({config.n_layers} layers, {config.n_experts} experts, top {config.top_k})"
    else:
        layer = llms.Layer(attention, llms.MLP(kind="dense", intermediate=4 * h), 4 * h * h, 8 * h * h, 0)
        kind = f"tiny GPT ({config.n_layers} layers, hidden {h})"
    return llms.LLMConfig(
        name=kind,
        aliases=(),
        n_layers=config.n_layers,
        hidden=h,
        source="lab_utils.models",
        source_date="2026-12",
        n_heads=heads,
        n_kv_heads=heads,
        ffn_hidden=4 * h,
        vocab_size=config.vocab_size,
        layers=(layer,) * config.n_layers,
        embedding_params=0,
        head_params=h * config.vocab_size,
    )


def random_tokens(config: GPTConfig, batch: int, seed: int = 0):
    """A (batch, seq_len) int64 tensor of random token ids, reproducible from ``seed``."""
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch={batch!r}: must be a positive integer")
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(config.vocab_size, (batch, config.seq_len), generator=generator)


class LoRALinear(nn.Module):
    """A frozen ``nn.Linear`` plus a trainable low-rank update (LoRA, Hu et al., arXiv 2106.09685).

    ``y = base(x) + scale · x Aᵀ Bᵀ`` with A of shape (rank, in), B of shape (out, rank) and
    ``scale = alpha / rank``. B starts at zero, so a fresh adapter leaves the model unchanged;
    A starts as ``nn.Linear`` weights do (Hugging Face peft's default; the paper draws it
    from a Gaussian).
    """

    def __init__(self, base: nn.Linear, rank: int = 4, alpha: float = 8.0):
        super().__init__()
        if not isinstance(base, nn.Linear):
            raise TypeError(f"base must be an nn.Linear, got {type(base).__name__}")
        if (
            isinstance(rank, bool)
            or not isinstance(rank, int)
            or not 1 <= rank <= min(base.in_features, base.out_features)
        ):
            raise ValueError(
                f"rank={rank!r}: must be an integer from 1 to min(in, out) = "
                f"{min(base.in_features, base.out_features)}"
            )
        if (
            isinstance(alpha, bool)
            or not isinstance(alpha, (int, float))
            or not math.isfinite(alpha)
            or alpha <= 0
        ):
            raise ValueError(f"alpha={alpha!r}: must be a finite number > 0")
        self.base = base
        self.rank = rank
        self.scale = alpha / rank
        for parameter in base.parameters():
            parameter.requires_grad_(False)
        factory = {"device": base.weight.device, "dtype": base.weight.dtype}
        self.lora_a = nn.Parameter(torch.empty(rank, base.in_features, **factory))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank, **factory))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))

    def forward(self, x):
        return self.base(x) + (x @ self.lora_a.T @ self.lora_b.T) * self.scale

    def merged_weight(self):
        """``W + scale · B A``: the one weight matrix that computes what this layer computes."""
        with torch.no_grad():
            return self.base.weight + self.scale * (self.lora_b @ self.lora_a)

    def merge(self) -> nn.Linear:
        """A plain ``nn.Linear`` holding the merged weight (and the base bias): no extra cost at inference."""
        merged = nn.Linear(
            self.base.in_features,
            self.base.out_features,
            bias=self.base.bias is not None,
            device=self.base.weight.device,
            dtype=self.base.weight.dtype,
        )
        with torch.no_grad():
            merged.weight.copy_(self.merged_weight())
            if self.base.bias is not None:
                merged.bias.copy_(self.base.bias)
        return merged


def apply_lora(model: TinyGPT, rank: int = 4, alpha: float = 8.0) -> TinyGPT:
    """Freeze every weight of ``model`` and wrap the linears of its blocks in :class:`LoRALinear`.

    The attention (qkv, proj) and MLP linears get adapters; embeddings, norms and the tied
    output layer stay frozen. Changes ``model`` in place and returns it.
    """
    if not isinstance(model, TinyGPT):
        raise TypeError(f"model must be a TinyGPT, got {type(model).__name__}")
    if any(isinstance(module, LoRALinear) for module in model.modules()):
        raise ValueError("model already has LoRA adapters: apply_lora once per model")
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    for block in model.blocks:
        for parent in (block.attention, block.mlp.layers):
            for name, child in list(parent.named_children()):
                if isinstance(child, nn.Linear):
                    setattr(parent, name, LoRALinear(child, rank=rank, alpha=alpha))
    return model


def merge_lora(model: nn.Module) -> nn.Module:
    """Replace every :class:`LoRALinear` in ``model`` by its merged ``nn.Linear``, in place.

    Returns ``model``.
    """
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, LoRALinear):
                setattr(parent, name, child.merge())
    return model
