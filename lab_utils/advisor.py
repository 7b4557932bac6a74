"""Which hardware for my job? Every option that could do it, ranked by cost then time.

Three kinds of job: :func:`fine_tune` (a catalog LLM or a parameter count, tokens, method
full / LoRA / QLoRA), :func:`train` (a dense network, optionally with a sparse embedding table,
as in a recommender) and :func:`serve` (a model, requests per day, tokens in and out per request,
a latency target). Each returns an :class:`Advice`: one :class:`Option` per CPU server, catalog
GPU (alone or several of it in one server), serverless GPU class and, for serving, paid API,
with whether it fits, on which device and how many, hours, dollars and kWh per job or per month,
the price's source and date, the bound that limits it, and for an option that cannot work, why;
``Advice.verdict`` is the answer as a :class:`Verdict`, written one way wherever it is shown.

The advisor composes and computes nothing of its own: memory from ``lab_utils.memory``, a run's
hours and dollars from ``economics.run_estimate`` (CPU and GPU alike), serving speeds from
``lab_utils.serving``, serverless from ``lab_utils.serverless``, the shared kernels from
``lab_utils.basics``, prices from ``lab_utils/data/prices.toml`` with their dates.

This module is the front door; the work lives in three modules: ``advisor_options`` (the answer
as data and its renderer), ``advisor_runs`` (fine-tunes and training runs) and
``advisor_serving`` (a month of serving).

Prices: a GPU is priced by its cheapest hourly offer in the data (per GPU); a catalog GPU with no
hourly offer by its Runpod serverless *active* rate x 3600, labelled so; a GPU with neither is
listed as "no price in the data" and never given an invented one. A CPU server is priced per
core from the CPU offer ``cpu_offer`` (default AWS c5.24xlarge) scaled to the catalog CPU's core
count, labelled as that assumption. Everything here is an estimate from vendor specifications
and list prices, not a measurement. Pure Python: no torch.
"""

from __future__ import annotations

from lab_utils.advisor_options import BOUNDS, PERIODS, Advice, Option, Verdict
from lab_utils.advisor_runs import fine_tune, train
from lab_utils.advisor_serving import serve

__all__ = ["BOUNDS", "PERIODS", "Advice", "Option", "Verdict", "fine_tune", "serve", "train"]
