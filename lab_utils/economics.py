"""From FLOPs to hours to dollars: fine-tuning cost, serving cost per token, API vs self-hosting.

Formulas (sources in each docstring):

- compute: training ≈ 6·N·D FLOPs (forward 2ND, backward 4ND; Kaplan et al., arXiv 2001.08361),
  LoRA ≈ 4·N·D (frozen weights get no weight gradients; Hu et al., arXiv 2106.09685),
  inference ≈ 2·N per token; for a model of known shape, plus the attention scores and their
  weighted sum (:func:`attention_flops_per_token`), as practice counts MFU;
- time: hours = FLOPs / (peak FLOP/s x MFU x devices) / 3600 (MFU: model FLOPs utilisation,
  Chowdhery et al., PaLM, arXiv 2204.02311), the MFU by regime (:func:`mfu_assumption`);
- serving: decode at batch 1 is bandwidth bound, tokens/s <= bandwidth / bytes of weights
  (batches, prefill and the KV cache: ``lab_utils.serving``);
  the monthly bills, API against self-hosting, and their break-even: ``lab_utils.bills``
  (named here too: ``economics.serving_costs``, ``economics.api_cost``, ...);
- any run's hours and dollars, CPU or GPU: :func:`run_estimate`; a fine-tune of a catalog LLM:
  :func:`fine_tune_estimate`.

Prices live in ``lab_utils/data/prices.toml``, each with its date and source, read by
``lab_utils.prices`` (import it where a cell reads a price). Money in US dollars, time in
seconds or hours as the names say. Pure Python: no torch.
"""

from __future__ import annotations

from lab_utils import assumptions, checks, memory
from lab_utils.basics import FLOPS_PER_PARAM_PER_TOKEN, HOURS_PER_MONTH
from lab_utils.bills import (  # the serving bills, named here too
    ServingCosts,
    api_cost,
    blended_price_per_million,
    breakeven_tokens_per_month,
    cost_per_million_tokens,
    serving_costs,
)
from lab_utils.economics_fine_tune import FineTuneEstimate, fine_tune_estimate
from lab_utils.economics_flops import (
    ATTENTION_TERMS,
    attention_flops_per_token,
    decode_tokens_per_s_bound,
    mfu_assumption,
    training_flops,
    training_hours,
)
from lab_utils.economics_run import RunEstimate, run_estimate, sharded_communication

__all__ = [
    "ATTENTION_TERMS",
    "FLOPS_PER_PARAM_PER_TOKEN",
    "HOURS_PER_MONTH",
    "DoesNotFit",
    "FineTuneEstimate",
    "RunEstimate",
    "ServingCosts",
    "api_cost",
    "attention_flops_per_token",
    "blended_price_per_million",
    "breakeven_tokens_per_month",
    "cost_per_million_tokens",
    "decode_tokens_per_s_bound",
    "fine_tune_estimate",
    "mfu_assumption",
    "range_verdict",
    "run_estimate",
    "sharded_communication",
    "serving_costs",
    "training_flops",
    "training_hours",
]

DoesNotFit = memory.DoesNotFit
"""No number of GPUs of one type holds the job (``memory.gpus_to_hold``)."""


# --- claim checks ----------------------------------------------------------------------------


def range_verdict(claimed, low, high, tolerance=None) -> str:
    """Compare a claimed figure with the range [low, high] that sourced figures give.

    'consistent' inside the range widened by ``tolerance`` (default: the ``range_tolerance``
    assumption); otherwise 'wrong: Nx too low' or
    'wrong: Nx too high', N measured from the nearer end of the range.
    """
    claimed = checks.number("claimed", claimed)
    low = checks.number("low", low)
    high = checks.number("high", high, minimum=low, strict=False)
    tolerance = checks.number(
        "tolerance",
        assumptions.resolve(range_tolerance=tolerance)[0]["range_tolerance"],
        strict=False,
        maximum=1.0,
    )
    if low * (1 - tolerance) <= claimed <= high * (1 + tolerance):
        return "consistent"
    if claimed < low:
        return f"wrong: {low / claimed:.1f}x too low"
    return f"wrong: {claimed / high:.1f}x too high"
