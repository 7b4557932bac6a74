"""Mixtures of experts in the calculators (issue 35, item 5) and the tiny MoE of lab_utils.models
(item 7): the experts a batch touches, expert parallelism's bytes, the model's counts."""

import pytest
import torch

from lab_utils import basics, comms, models


@pytest.mark.parametrize("n_experts, top_k", [(8, 2), (128, 8), (256, 8), (64, 1)])
@pytest.mark.parametrize("tokens", [1, 4, 32, 1000])
def test_experts_touched_is_the_uniform_routing_expectation(n_experts, top_k, tokens):
    expected = n_experts * (1 - (1 - top_k / n_experts) ** tokens)
    assert basics.experts_touched(n_experts, top_k, tokens) == pytest.approx(expected)
    assert top_k <= basics.experts_touched(n_experts, top_k, tokens) <= n_experts


def test_experts_touched_by_mixtral_at_batch_4_is_five_and_a_half():
    assert basics.experts_touched(8, 2, 4) == pytest.approx(5.46875)


def test_experts_touched_matches_a_simulated_uniform_router():
    generator = torch.Generator().manual_seed(0)
    n_experts, top_k, tokens, trials = 16, 2, 6, 4000
    picks = torch.rand(trials, tokens, n_experts, generator=generator).topk(top_k, dim=-1)[1]
    touched = torch.tensor([p.unique().numel() for p in picks.reshape(trials, -1)]).float().mean()
    assert float(touched) == pytest.approx(basics.experts_touched(n_experts, top_k, tokens), rel=0.02)


def test_a_skewed_router_touches_fewer_experts_and_keeps_k_per_token():
    uniform = basics.experts_touched(64, 4, 16)
    skewed = [basics.experts_touched(64, 4, 16, skew=s) for s in (0.5, 1.0, 2.0)]
    assert uniform > skewed[0] > skewed[1] > skewed[2] >= 4
    chances = basics._routing_probabilities(8, 2, 3.0)
    assert sum(chances) == pytest.approx(2) and max(chances) == 1.0
    assert basics.experts_touched(8, 2, 1, skew=1.5) == pytest.approx(2)  # one token: its k experts


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_experts=8, top_k=9, tokens=1), "top_k"),
        (dict(n_experts=0, top_k=1, tokens=1), "n_experts"),
        (dict(n_experts=8, top_k=2, tokens=-1), "tokens"),
        (dict(n_experts=8, top_k=2, tokens=1, skew=-1), "skew"),
    ],
)
def test_experts_touched_refuses_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        basics.experts_touched(**kwargs)


def test_all_to_all_sends_all_but_the_own_share():
    assert comms.all_to_all_bytes(800, 8) == 700
    assert comms.all_to_all_bytes(800, 1) == 0


# --------------------------------------------------------------------------- the tiny MoE


MOE_CONFIGS = [
    models.MoEConfig(),
    models.MoEConfig(
        vocab_size=50, seq_len=8, n_layers=1, hidden=16, n_heads=2, n_experts=4, top_k=1, n_shared=0
    ),
    models.MoEConfig(hidden=32, n_heads=4, n_experts=6, top_k=3, expert_hidden=48, n_shared=2),
]


@pytest.mark.parametrize("config", MOE_CONFIGS)
def test_tiny_moe_counts_its_parameters(config):
    model = models.TinyMoE(config)
    assert sum(p.numel() for p in model.parameters()) == config.n_params
    skipped = config.n_layers * (config.n_experts - config.top_k) * config.expert_params
    assert config.params_per_token == config.n_params - skipped


def test_tiny_moe_mlp_is_the_weighted_sum_of_the_chosen_experts():
    torch.manual_seed(0)
    config = MOE_CONFIGS[2]
    mlp = models.TinyMoE(config).blocks[0].mlp
    x = torch.randn(7, config.hidden)
    scores, chosen = mlp.router(x).topk(config.top_k, dim=-1)
    weights = torch.softmax(scores, dim=-1)
    expected = sum(shared(x) for shared in mlp.shared)
    expected = expected + torch.stack(
        [
            sum(weights[i, j] * mlp.experts[int(chosen[i, j])](x[i]) for j in range(config.top_k))
            for i in range(7)
        ]
    )
    torch.testing.assert_close(mlp(x), expected)
    assert mlp.experts_used(x) == chosen.unique().numel()


def test_tiny_moe_generates_with_its_kv_cache_as_without():
    config = models.MoEConfig(seq_len=16)
    model = models.TinyMoE(config).eval()
    tokens = models.random_tokens(config, 2)[:, :6]
    generated = model.generate(tokens, 4)
    with torch.no_grad():
        for step in range(4):
            assert torch.equal(model(generated[:, : 6 + step])[:, -1].argmax(-1), generated[:, 6 + step])


def test_tiny_moe_refuses_bad_shapes():
    with pytest.raises(ValueError, match="top_k"):
        models.MoEConfig(n_experts=2, top_k=3)
    with pytest.raises(ValueError, match="n_shared"):
        models.MoEConfig(n_shared=-1)
    with pytest.raises(TypeError, match="MoEConfig"):
        models.TinyMoE(models.GPTConfig())
