"""Monthly bills of serving: an API's price per token against self-hosted GPUs, and the volume at
which they meet (``economics`` names these too: ``economics.serving_costs`` is this module's).

- self-hosted $ per 1M tokens = $/h / (tokens/s x 3600) x 1e6 (``prices.usd_per_million_tokens``);
- an API bills tokens read and written at their prices per million (:func:`api_cost`);
- pay per use bills the GPU-seconds used; always on bills whole GPUs every hour of the month, as
  many as ``basics.always_on_devices`` keeps (:func:`serving_costs`);
- break-even: the monthly token volume at which self-hosting (fine-tune cost spread over months,
  ``basics.per_month_usd``) costs what the API costs (:func:`breakeven_tokens_per_month`).

For real traffic (cold starts, idle time, batches that do not fill) ask ``advisor.serve``.
Money in US dollars. Pure Python: no torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lab_utils import assumptions, basics, checks, prices
from lab_utils.basics import HOURS_PER_MONTH
from lab_utils.prices import SECONDS_PER_HOUR

__all__ = [
    "ServingCosts",
    "api_cost",
    "blended_price_per_million",
    "breakeven_tokens_per_month",
    "cost_per_million_tokens",
    "serving_costs",
]


def cost_per_million_tokens(usd_per_hour, tokens_per_s) -> float:
    """Dollars per 1M tokens on a machine rented at ``usd_per_hour`` that produces
    ``tokens_per_s`` (the formula: ``prices.usd_per_million_tokens``)."""
    return prices.usd_per_million_tokens(usd_per_hour, tokens_per_s)


def api_cost(input_tokens, output_tokens, *, price_in_per_million, price_out_per_million) -> float:
    """Dollars an API charges for ``input_tokens`` read and ``output_tokens`` written."""
    input_tokens = checks.number("input_tokens", input_tokens, strict=False)
    output_tokens = checks.number("output_tokens", output_tokens, strict=False)
    price_in = checks.number("price_in_per_million", price_in_per_million, strict=False)
    price_out = checks.number("price_out_per_million", price_out_per_million, strict=False)
    return (input_tokens * price_in + output_tokens * price_out) / 1e6


def blended_price_per_million(price_in_per_million, price_out_per_million, output_share=None) -> float:
    """Dollars per 1M tokens of traffic in which ``output_share`` (0 to 1) of the tokens are
    written and the rest read: the API price a workload actually pays per token. None: the share
    of the typical request, ``output_tokens`` / (``input_tokens`` + ``output_tokens``)."""
    if output_share is None:
        request = assumptions.resolve(input_tokens=None, output_tokens=None)[0]
        output_share = request["output_tokens"] / (request["input_tokens"] + request["output_tokens"])
    output_share = checks.number("output_share", output_share, strict=False, maximum=1.0)
    return api_cost(
        1e6 * (1 - output_share),
        1e6 * output_share,
        price_in_per_million=price_in_per_million,
        price_out_per_million=price_out_per_million,
    )


@dataclass(frozen=True)
class ServingCosts:
    """Dollars per month to serve ``tokens_per_month`` three ways (fine-tune cost spread over
    months, ``basics.per_month_usd``, in both self-hosted ways): the API; a GPU billed only
    while it works at ``tokens_per_s`` (pay per use, fully busy: no cold start, no idle second,
    a full batch: the floor of any serverless bill); GPUs kept on all month (always on, as many
    as ``basics.always_on_devices`` keeps: the average load at most ``utilisation`` of them). For
    real traffic, cold starts and idle time included, ask ``advisor.serve`` (``lab-utils pick
    serve``)."""

    tokens_per_month: float
    api_per_month_usd: float
    pay_per_use_per_month_usd: float
    always_on_per_month_usd: float
    always_on_gpus: int
    gpu_hours_per_month: float

    @property
    def cheapest(self) -> str:
        """'api', 'pay per use' or 'always on'."""
        costs = {
            "api": self.api_per_month_usd,
            "pay per use": self.pay_per_use_per_month_usd,
            "always on": self.always_on_per_month_usd,
        }
        return min(costs, key=costs.get)


def _serving_inputs(
    api_cost_per_million, usd_per_hour, tokens_per_s, fine_tune_cost, amortize_months, always_on_usd_per_hour
):
    api = checks.number("api_cost_per_million", api_cost_per_million, strict=False)
    price = checks.number("usd_per_hour", usd_per_hour, strict=False)
    tokens_per_s = checks.number("tokens_per_s", tokens_per_s)
    fixed = basics.per_month_usd(
        checks.number("fine_tune_cost", fine_tune_cost, strict=False), amortize_months
    )
    always_price = (
        price
        if always_on_usd_per_hour is None
        else checks.number("always_on_usd_per_hour", always_on_usd_per_hour, strict=False)
    )
    return api, price, tokens_per_s, fixed, always_price


def serving_costs(
    tokens_per_month,
    *,
    api_cost_per_million,
    usd_per_hour,
    tokens_per_s,
    fine_tune_cost=0.0,
    amortize_months=None,
    always_on_usd_per_hour=None,
    utilisation=None,
) -> ServingCosts:
    """Monthly cost of ``tokens_per_month`` on an API at ``api_cost_per_million`` (blended:
    :func:`blended_price_per_million`) and self-hosted on GPUs making ``tokens_per_s`` each
    (``serving.estimate``). Pay per use bills the GPU-seconds used at ``usd_per_hour``;
    always on bills whole GPUs all month (``basics.always_on_per_month_usd``) at
    ``always_on_usd_per_hour`` (default ``usd_per_hour``), as many as keep the average load
    within ``utilisation`` of them (``basics.always_on_devices``; None: the ``serve_utilisation``
    assumption). ``fine_tune_cost`` is spread over ``amortize_months`` (default: the assumption)."""
    tokens = checks.number("tokens_per_month", tokens_per_month, strict=False)
    api, price, tokens_per_s, fixed, always_price = _serving_inputs(
        api_cost_per_million,
        usd_per_hour,
        tokens_per_s,
        fine_tune_cost,
        amortize_months,
        always_on_usd_per_hour,
    )
    gpu_hours = tokens / tokens_per_s / SECONDS_PER_HOUR
    gpus = basics.always_on_devices(gpu_hours, HOURS_PER_MONTH, utilisation)
    return ServingCosts(
        tokens_per_month=tokens,
        api_per_month_usd=api_cost(tokens, 0, price_in_per_million=api, price_out_per_million=0),
        pay_per_use_per_month_usd=fixed + gpu_hours * price,
        always_on_per_month_usd=fixed + basics.always_on_per_month_usd(gpus, always_price),
        always_on_gpus=gpus,
        gpu_hours_per_month=gpu_hours,
    )


def breakeven_tokens_per_month(
    *,
    api_cost_per_million,
    usd_per_hour,
    tokens_per_s,
    fine_tune_cost=0.0,
    amortize_months=None,
    always_on=False,
    always_on_usd_per_hour=None,
    utilisation=None,
) -> float:
    """The fewest tokens per month at which self-hosting costs no more than the API
    (same inputs as :func:`serving_costs`: a GPU fully busy whenever billed, so pay per use is
    a floor, no cold start or idle time; ``advisor.serve`` prices real traffic); ``math.inf``
    when it never does.

    Pay per use: both costs grow linearly, so break-even = monthly fine-tune share /
    (API $ per token - self-hosted $ per token). Always on: the first volume at which the API
    bill reaches the cost of the GPUs needed for that volume, each carrying ``utilisation`` of
    its capacity (``basics.always_on_devices``' rule).
    """
    api, price, tokens_per_s, fixed, always_price = _serving_inputs(
        api_cost_per_million,
        usd_per_hour,
        tokens_per_s,
        fine_tune_cost,
        amortize_months,
        always_on_usd_per_hour,
    )
    if not always_on:
        self_hosted = cost_per_million_tokens(price, tokens_per_s)
        if fixed == 0:
            return 0.0 if self_hosted <= api else math.inf
        return fixed / (api - self_hosted) * 1e6 if api > self_hosted else math.inf
    share = assumptions.resolve(serve_utilisation=utilisation)[0]["serve_utilisation"]
    # tokens one always-on GPU carries a month, at the load basics.always_on_devices allows it
    capacity = (
        tokens_per_s * SECONDS_PER_HOUR * HOURS_PER_MONTH * checks.number("utilisation", share, maximum=1.0)
    )
    per_gpu = basics.always_on_per_month_usd(1, always_price)
    api_per_token = api_cost(1, 0, price_in_per_million=api, price_out_per_million=0)
    if api == 0 or capacity * api_per_token <= per_gpu:
        return math.inf  # a GPU carrying its share costs more than the API for the same tokens
    # with k GPUs (up to k x capacity tokens) the bills meet at (fixed + k x per_gpu) / api;
    # the fewest k for which that volume fits in k GPUs: k >= fixed / (api x capacity - per_gpu)
    gpus = max(1, math.ceil(fixed / (api_per_token * capacity - per_gpu)))
    if (fixed + gpus * per_gpu) / api_per_token > gpus * capacity:  # rounding at the boundary
        gpus += 1
    return (fixed + gpus * per_gpu) / api_per_token
