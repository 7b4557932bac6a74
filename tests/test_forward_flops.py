"""Forward FLOPs as notebook 06 counts them for its GPU floor estimates (models.MLP.forward_flops,
economics.training_flops), held against torch.utils.flop_counter.FlopCounterMode counting the
same forward pass."""

import torch
from torch.utils.flop_counter import FlopCounterMode

from lab_utils import economics, models


def counted_flops(module, inputs) -> int:
    counter = FlopCounterMode(display=False)
    with counter, torch.inference_mode():
        module(inputs)
    return counter.get_total_flops()


def test_an_mlp_forward_is_its_matrix_products():
    mlp = models.MLP([64, 256, 256, 8]).eval()
    for batch in (1, 32):
        assert mlp.forward_flops(batch) == counted_flops(mlp, torch.randn(batch, 64))


def test_a_tiny_gpt_forward_is_2_n_d_plus_the_full_attention_square():
    """FlopCounterMode counts the whole square of scores (no causal half), so the calculator
    matches it with attention_term="non_causal"; the notebook keeps the causal default, 7% lower
    here, which is right for a floor."""
    config = models.GPTConfig(seq_len=256, n_layers=4, hidden=256, n_heads=4)
    shape = models.llm_config(config)
    prompt = models.random_tokens(config, batch=1)
    counted = counted_flops(models.TinyGPT(config).eval(), prompt)
    full = economics.training_flops(
        shape.n_params,
        config.seq_len,
        "inference",
        model=shape,
        seq_len=config.seq_len,
        attention_term="non_causal",
    )
    causal = economics.training_flops(
        shape.n_params,
        config.seq_len,
        "inference",
        model=shape,
        seq_len=config.seq_len,
        attention_term="causal",
    )
    assert full == counted
    assert causal < counted
