"""Memory of a real LLM (GPT-2, Llama and their kin, ``lab_utils.llms``): the activations its
blocks save for backward (:func:`llm_activation_bytes`, eager or fused attention, gradient
checkpointing), the loss at its peak (:func:`loss_bytes`), the KV cache (:func:`kv_cache_bytes`)
and LoRA's adapter parameters as ``peft`` counts them (:func:`lora_params`). Part of
``lab_utils.memory``, which names all of it."""

from __future__ import annotations

import math

from lab_utils import assumptions, checks, llms
from lab_utils.memory_training import RECOMPUTE

ATTENTION = ("eager", "sdpa")
"""Attention kernels: "eager" (scores and softmax as tensors of s x s per head, kept for
backward) and "sdpa" (PyTorch's fused scaled_dot_product_attention, FlashAttention: the
softmax is recomputed in backward from the output and one log-sum-exp per row, no s x s)."""


def _layer_activation_bytes(
    config: llms.LLMConfig, layer, tokens: int, batch: int, seq_len: int, attention: str, value: int
) -> float:
    """Bytes one block (``layer``, an ``llms.Layer``) of ``config`` saves for backward over
    ``tokens`` = batch x seq_len."""
    h, heads = config.hidden, layer.attention.n_heads
    q, kv = heads * layer.attention.head_dim, layer.attention.n_kv_heads * layer.attention.head_dim
    scores = batch * heads * seq_len * seq_len
    if config.family == "gpt2":
        f = config.ffn_hidden
        # two LayerNorms (input, and mean and rstd in fp32 as on CUDA), the inputs of c_attn,
        # attn.c_proj and c_fc, and the GELU (tanh form: its input, tanh, 0.5x, 1 + tanh, output)
        kept = value * tokens * (2 * h + 3 * h + 5 * f) + 2 * 2 * 4 * tokens
        if attention == "sdpa":  # q, k and v in c_attn's output, one log-sum-exp per row and head
            return kept + value * tokens * 3 * h + 4 * batch * heads * seq_len
        return kept + value * tokens * 3 * q + value * scores  # q, k, v copies; the softmax output
    # Llama: two RMSNorms (fp32 upcast of the input, the normalised value, 1/rms per token),
    # the inputs of q/k/v, o_proj and gate/up, and SwiGLU's gate, SiLU(gate), up and product;
    # a mixture of experts: each token's top_k copies of its input to the experts it goes to,
    # their SwiGLU values, and the shared experts'
    mlp = layer.mlp
    if mlp.kind == "moe":
        gathered, width = mlp.top_k * h, mlp.top_k * mlp.intermediate + mlp.shared_intermediate
    else:
        gathered, width = 0, mlp.intermediate
    norms = 2 * ((max(4, value) + value) * tokens * h + 4 * tokens)
    kept = norms + value * tokens * (2 * h + q + gathered + 4 * width)
    if attention == "sdpa":  # rotated q and k, v (grouped: kv heads), log-sum-exp
        return kept + value * tokens * (q + 2 * kv) + 4 * batch * heads * seq_len
    # eager: q, and k and v repeated to every query head; softmax in fp32 and its cast back
    return kept + value * tokens * 3 * q + (4 + (value if value != 4 else 0)) * scores


def llm_activation_bytes(
    model, *, seq_len, batch=1, recompute: str = "none", attention: str | None = None, bytes_per_value=2
) -> float:
    """Bytes autograd keeps for backward in one forward pass of a whole ``transformers`` model,
    from the embedding output to the loss, logits included.

    ``model``: a catalog name or an ``llms.LLMConfig`` with its layers (GPT-2; Llama, Mistral,
    Qwen2 and Qwen3 checked; a mixture of experts' or MLA's layers counted alike with their own
    widths, each token's expert inputs and SwiGLU values top_k times), as ``transformers``
    (5.x) writes these models, dropout off (the Llama
    family has none; GPT-2's 0.1 would add its masks). ``bytes_per_value``: 2 for bf16/fp16
    training, 4 for fp32; softmax statistics, RMSNorm's upcast and the loss stay fp32.
    ``attention``: one of :data:`ATTENTION` (eager adds the s x s softmax per head and layer;
    None: the ``attention`` assumption). ``recompute`` (gradient checkpointing): "none";
    "selective", the attention core recomputed (no s x s term); "full", each block keeps only its
    input, plus one block's activations, live while its backward runs. Beyond the blocks: the
    final norm, the LM head's input, and the log-softmax of the logits in fp32 (batch x seq_len x
    vocab x 4 bytes: 2.1 GB for Llama-3.1-8B at 4,096 tokens), the labels, and the positions.
    Checked within 10% of what ``transformers`` models save (tests/test_llm_memory.py).
    """
    config = llms.as_config(model)
    if not config.layers:
        raise ValueError(
            f"model={config.name!r}: its layer shapes are not in lab_utils/data/llm_configs.toml"
        )
    seq_len, batch = checks.count("seq_len", seq_len), checks.count("batch", batch)
    checks.choice("recompute", recompute, RECOMPUTE)
    attention = assumptions.resolve(attention=attention)[0]["attention"]
    checks.choice("attention", attention, ATTENTION)
    if isinstance(bytes_per_value, bool) or bytes_per_value not in (2, 4):
        raise ValueError(
            f"bytes_per_value={bytes_per_value!r} is not allowed; use 2 (bf16, fp16) or 4 (fp32)"
        )
    value = int(bytes_per_value)
    tokens = batch * seq_len
    kernel = "sdpa" if recompute == "selective" else attention
    layers = [
        _layer_activation_bytes(config, layer, tokens, batch, seq_len, kernel, value)
        for layer in config.layers
    ]
    blocks = sum(layers)
    if recompute == "full":
        blocks = config.n_layers * value * tokens * config.hidden + max(layers)
    if config.family == "gpt2":
        norm = value * tokens * config.hidden + 2 * 4 * tokens
    else:
        norm = (max(4, value) + value) * tokens * config.hidden + 4 * tokens
    head = norm + value * tokens * config.hidden + _saved_log_probs_bytes(config, tokens) + 8 * tokens
    positions = 8 * seq_len if config.family == "gpt2" else 2 * value * seq_len * config.head_dim
    return float(blocks + head + positions)


LOSS_IMPLS = ("hf", "chunked", "fused")
"""How a causal language model's loss is computed, which decides its peak memory (:func:`loss_bytes`):
"hf", Hugging Face transformers (``ForCausalLMLoss``): the full logits, upcast to fp32, through
``cross_entropy``; "chunked", torchtune's ``CEWithChunkedOutputLoss``: the output projection and
the fp32 upcast one chunk of tokens at a time; "fused", a fused linear cross-entropy kernel
(Liger Kernel's ``LigerFusedLinearCrossEntropyLoss``): logits made and dropped a chunk at a
time, their gradient computed in the forward pass."""


def _saved_log_probs_bytes(config: llms.LLMConfig, tokens: int) -> float:
    """``cross_entropy`` keeps its fp32 log-softmax for backward: 4 bytes per logit."""
    return 4.0 * tokens * config.vocab_size


def loss_bytes(model, *, seq_len, batch=1, loss_impl: str, bytes_per_value=2, loss_chunks=None) -> float:
    """Bytes the loss of a causal language model holds at its peak, the fp32 log-probabilities
    it saves for backward included, over t = ``batch`` x ``seq_len`` tokens, vocabulary V.

    ``loss_impl`` (:data:`LOSS_IMPLS`), per token, values of ``bytes_per_value`` (2 or 4):

    - "hf": 12·V. Forward: the logits (value·V), their fp32 upcast (4·V) and the saved
      log-softmax (4·V); backward: the saved log-softmax, its gradient and the upcast's
      gradient, 4·V each, the peak (measured on ``transformers``: tests/test_llm_memory.py).
    - "chunked", n = ``loss_chunks`` chunks (None: the ``loss_chunks`` assumption): forward,
      every chunk's logits (value·V) and saved log-softmax (4·V) with one chunk's upcast (4·V/n,
      none in fp32); backward, 4·V + (8 + value)·V/n; the larger (6.5·V in bf16, n = 8).
    - "fused": no tensor of V per token outlives a chunk: the gradient of the head's input
      (value·hidden per token) and one chunk of c tokens' logits (c·V·value), c the power of two
      at or above t / ceil(V / hidden), at most t (Liger Kernel's chunking).

    Llama-3.1-8B at 4,096 tokens: "hf" 6.3 GB, "chunked" 3.4 GB, "fused" 67 MB.
    """
    config = llms.as_config(model)
    seq_len, batch = checks.count("seq_len", seq_len), checks.count("batch", batch)
    checks.choice("loss_impl", loss_impl, LOSS_IMPLS)
    if isinstance(bytes_per_value, bool) or bytes_per_value not in (2, 4):
        raise ValueError(
            f"bytes_per_value={bytes_per_value!r} is not allowed; use 2 (bf16, fp16) or 4 (fp32)"
        )
    tokens, vocab, value = batch * seq_len, config.vocab_size, int(bytes_per_value)
    log_probs = _saved_log_probs_bytes(config, tokens)
    if loss_impl == "hf":
        return 3 * log_probs
    if loss_impl == "chunked":
        n = checks.count("loss_chunks", assumptions.resolve(loss_chunks=loss_chunks)[0]["loss_chunks"])
        upcast = 4 if value < 4 else 0
        forward = tokens * vocab * (value + upcast / n) + log_probs
        backward = log_probs + tokens * vocab * (8 + value) / n
        return max(forward, backward)
    chunk = min(tokens, 2 ** math.ceil(math.log2(math.ceil(tokens / math.ceil(vocab / config.hidden)))))
    return float(value * tokens * config.hidden + value * chunk * vocab)


def kv_cache_bytes(*, n_layers, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_value=2) -> float:
    """Bytes of the key/value cache: 2 (K and V) x layers x KV heads x head_dim x tokens x bytes.

    ``seq_len`` tokens for each of ``batch`` sequences. Llama-3.1-8B in bf16 (32 layers,
    8 KV heads of 128): 2·32·8·128·2 = 131,072 bytes = 131 kB per token.
    """
    n_layers, n_kv_heads, head_dim, seq_len, batch = (
        checks.count(name, value)
        for name, value in (
            ("n_layers", n_layers),
            ("n_kv_heads", n_kv_heads),
            ("head_dim", head_dim),
            ("seq_len", seq_len),
            ("batch", batch),
        )
    )
    bytes_per_value = checks.number("bytes_per_value", bytes_per_value)
    return float(2 * n_layers * n_kv_heads * head_dim * seq_len * batch * bytes_per_value)


LORA_TARGETS = ("attention", "all-linear")
"""Where :func:`lora_params` puts adapters: "attention", the attention projections (q, k, v
and o; GPT-2's fused ``c_attn`` and its ``attn.c_proj``); "all-linear", peft's
``target_modules="all-linear"``: every linear layer of every block, the LM head excepted."""


PEFT_FUSED_EXPERT_TYPES = ("mixtral", "qwen3_moe", "olmoe", "deepseek_v2", "deepseek_v3", "glm4_moe")
"""model_types whose routed experts peft (0.21, on transformers 5's fused expert tensors) adapts
under "all-linear": it maps the names of transformers 4's expert linears onto the fused
parameters, so the router gets one adapter, each expert's gate and up projections one of rank
2r together and its down projection one of rank r, while linears of those names outside the
experts (dense MLP layers, shared experts) get none. Other types (qwen2_moe, gpt_oss) adapt
their nn.Linear layers only: attention and shared experts, no routed expert."""


def attention_linears(attention, hidden: int) -> tuple[tuple[str, int, int], ...]:
    """(name, in_features, out_features) of one block's attention projections, as
    ``transformers`` names them: q, k, v and o; for MLA q (or q_a and q_b through
    q_lora_rank), kv_a (to the latent and the rotary key), kv_b (latent to keys and values) and o."""
    a = attention
    if a.kind == "mla":
        nope = a.head_dim - a.qk_rope_head_dim
        if a.q_lora_rank is None:
            query = (("q_proj", hidden, a.n_heads * a.head_dim),)
        else:
            query = (("q_a_proj", hidden, a.q_lora_rank), ("q_b_proj", a.q_lora_rank, a.n_heads * a.head_dim))
        return query + (
            ("kv_a_proj_with_mqa", hidden, a.kv_lora_rank + a.qk_rope_head_dim),
            ("kv_b_proj", a.kv_lora_rank, a.n_heads * (nope + a.v_head_dim)),
            ("o_proj", a.n_heads * a.v_head_dim, hidden),
        )
    return (
        ("q_proj", hidden, a.n_heads * a.head_dim),
        ("k_proj", hidden, a.n_kv_heads * a.head_dim),
        ("v_proj", hidden, a.n_kv_heads * a.v_head_dim),
        ("o_proj", a.n_heads * a.v_head_dim, hidden),
    )


def _mlp_adapter_params(config: llms.LLMConfig, layer, rank: int) -> int:
    """LoRA parameters peft puts on one block's MLP under "all-linear" (see
    :data:`PEFT_FUSED_EXPERT_TYPES`)."""
    h, mlp = config.hidden, layer.mlp
    fused = config.model_type in PEFT_FUSED_EXPERT_TYPES
    if mlp.kind == "dense":
        return 0 if fused else rank * 3 * (h + mlp.intermediate)  # gate and up h -> f, down f -> h
    if fused:
        e, f = mlp.n_experts, mlp.intermediate
        return rank * (h + e) + e * 2 * rank * (h + 2 * f) + e * rank * (f + h)
    shared = rank * 3 * (h + mlp.shared_intermediate) if mlp.shared_intermediate else 0
    gate = rank * (h + 1) if config.model_type == "qwen2_moe" and mlp.shared_intermediate else 0
    return shared + gate


def lora_params(model, rank: int | None = None, targets: str | None = None) -> int:
    """Trainable LoRA parameters with rank-``rank`` adapters on the ``targets`` layers, as
    ``peft`` counts them (None: the ``lora_rank`` and ``lora_targets`` assumptions, rank 16 on
    every linear layer).

    An adapter on a d_in x d_out weight adds r·(d_in + d_out) parameters (Hu et al., arXiv
    2106.09685), counted per layer as the model has it: one adapter on GPT-2's fused q/k/v
    matrix (h x 3h), three on Llama's separate q, k and v, five on MLA's projections
    (:func:`attention_linears`); "all-linear" adds the MLP's, a mixture of experts' as peft
    adapts them (:data:`PEFT_FUSED_EXPERT_TYPES`). ``model`` is an ``llms.LLMConfig`` or a name
    ``llms.get`` knows; ``targets`` one of :data:`LORA_TARGETS`. Llama-3.1-8B, rank 16 on q, k,
    v and o (``targets="attention"``): 32 layers x 16 x (2·(4096 + 4096) + 2·(4096 + 1024)).
    """
    model = llms.as_config(model)
    values = assumptions.resolve(lora_rank=rank, lora_targets=targets)[0]
    rank, targets = values["lora_rank"], values["lora_targets"]
    rank = checks.count("rank", rank)
    checks.choice("targets", targets, LORA_TARGETS)
    if model.family == "gpt2":
        attention = {"c_attn", "attn.c_proj"}
        per_layer = sum(
            rank * (n_in + n_out)
            for name, n_in, n_out, _ in llms.linear_shapes(model)
            if targets == "all-linear" or name in attention
        )
        return model.n_layers * per_layer
    if not model.layers:
        raise ValueError(
            f"model={model.name!r}: its layers are not in lab_utils/data/llm_configs.toml, so its "
            f"adapters cannot be counted (give its config.json)"
        )
    total = 0
    for layer in model.layers:
        total += sum(
            rank * (n_in + n_out) for _, n_in, n_out in attention_linears(layer.attention, model.hidden)
        )
        if targets == "all-linear":
            total += _mlp_adapter_params(model, layer, rank)
    return total
