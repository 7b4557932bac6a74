"""What every simulation of one serving job shares, worked out once and kept across simulations:
the KV cache's size (:func:`kv_capacity_tokens`) and each step's seconds (:class:`Job`). Part of
``lab_utils.replica``, which names all of it.

A job is a model on a replica in a served precision under an engine, with a draft model (or
none) and the tokens a decode computes per step. A step's seconds are the roofline bound of
:func:`serving.step` (its decodes at their context, its prompt chunks after their cached prefix,
verify tokens as prompt tokens after the context) turned into the engine's time by
:func:`engines.step_time`, plus the draft's decode steps. The advisor simulates one job at
several rates and the website asks again as a reader moves a slider, so the last
``_JOBS_KEPT`` jobs' steps are kept (``_STEPS_KEPT`` of them in all), keyed by everything a
step's time reads: the job's objects and the assumptions a step resolves. Pure Python.
"""

from __future__ import annotations

import collections
import functools
import math

from lab_utils import assumptions, basics, checks, engines, hardware, llms, serving

__all__ = ["Job", "job", "kv_capacity_tokens", "timer"]

_JOBS_KEPT, _STEPS_KEPT = 256, 50_000
"""Jobs kept, and steps kept over all of them (a few hundred a job: about 10 MB in all)."""
_JOBS: collections.OrderedDict = collections.OrderedDict()


def kv_capacity_tokens(
    model,
    *,
    device,
    precision=None,
    kv_bytes_per_value=None,
    gpu_memory_utilization=None,
    weight_bytes_per_param=None,
) -> int:
    """Tokens the KV cache holds: (memory x ``gpu_memory_utilization`` - weights - the
    ``cuda_context_bytes`` reserve) / KV bytes per token; 0 when the weights do not fit."""
    config, spec = llms.resolve(model), hardware.as_spec(device)
    given = dict(weight_bytes_per_param=weight_bytes_per_param, kv_bytes_per_value=kv_bytes_per_value)
    served = serving.resolve_precision(precision, device=spec, model=config, **given)
    share = assumptions.resolve(gpu_memory_utilization=gpu_memory_utilization)[0]["gpu_memory_utilization"]
    share = checks.number("gpu_memory_utilization", share, maximum=1.0)
    free = (
        (spec.memory_bytes or 0) * share
        - assumptions.value("cuda_context_bytes")
        - basics.held_weight_bytes(
            config,
            weight_bytes_per_param=served.weight_bytes_per_param,
            expert_bytes_per_param=served.expert_bytes_per_param,
        )
    )
    per_token = serving.kv_bytes_per_sequence(
        config, context_len=1, kv_bytes_per_value=served.kv_bytes_per_value
    )
    return max(0, math.floor(free / per_token))


class Job:
    """One job's steps: ``seconds(n, context, chunks)`` -> (seconds, the engine's notes) of a
    step of ``n`` decodes at ``context`` and prompt ``chunks`` ((tokens, cached) each, sorted),
    each worked out once; ``capacity(gpu_memory_utilization)``: :func:`kv_capacity_tokens`.
    ``Job.held``: the steps the kept jobs hold in all (``kept``: this one is among them)."""

    held = 0

    def __init__(self, config, spec, served, profile, draft, decode_tokens):
        self.config, self.spec, self.served, self.profile = config, spec, served, profile
        self.draft, self.decode_tokens = draft, decode_tokens
        self.shape = dict(device=spec, **served.keywords)
        self.steps: dict = {}
        self.capacities: dict = {}
        self.timers: dict = {}  # the engine's step timer by the dtype a step computes in
        self.kept = True

    def seconds(self, n: int, context: int, chunks: tuple) -> tuple[float, dict]:
        key = (n, context, chunks)
        if key not in self.steps:
            self.steps[key] = self._price(n, context, chunks)
            Job.held += self.kept
        return self.steps[key]

    def capacity(self, gpu_memory_utilization) -> int:
        key = (gpu_memory_utilization, assumptions.value("cuda_context_bytes"))
        if key not in self.capacities:
            self.capacities[key] = kv_capacity_tokens(
                self.config,
                device=self.spec,
                gpu_memory_utilization=gpu_memory_utilization,
                **self.served.keywords,
            )
        return self.capacities[key]

    @functools.cached_property
    def _model_step(self):
        return serving.step_pricer(self.config, **self.shape)

    @functools.cached_property
    def _draft_step(self):
        return serving.step_pricer(self.draft, **self.shape)

    def _price(self, n, context, chunks) -> tuple[float, dict]:
        k, notes = self.decode_tokens, {}
        verify = [(k, context)] * n if k > 1 else []
        decodes = {context: n} if n and k == 1 else {}
        seconds = self._engine_s(self._model_step(decodes, list(chunks) + verify), notes)
        if n and self.draft is not None and k > 1:
            seconds += (k - 1) * self._engine_s(self._draft_step({context: n}), notes)
        return seconds, notes

    def _engine_s(self, bound: serving.StepBound, notes: dict) -> float:
        dtype = bound.compute_dtype
        if dtype not in self.timers:
            self.timers[dtype] = engines.step_timer(
                self.profile, compute_dtype=dtype, weight_bytes_per_param=self.served.weight_bytes_per_param
            )
        time = self.timers[dtype](bound.compute_s, bound.memory_s)
        notes.update(dict.fromkeys(time.notes))
        return time.seconds


def job(config, spec, served, profile, draft, decode_tokens) -> Job:
    """The kept :class:`Job` of ``config`` (an ``llms.LLMConfig``) on ``spec`` in ``served``
    under ``profile`` with ``draft`` (a model or None) and ``decode_tokens``, made when new. The
    models are keyed by identity (a catalog model is one object; the job holds it, so its id is
    not reused) or name, the rest by value, with the assumptions a step reads."""
    skew, dtypes = assumptions.value("routing_skew"), tuple(assumptions.value("compute_dtypes"))
    drafted = draft if draft is None or isinstance(draft, str) else id(draft)
    key = (id(config), spec, served, repr(profile), drafted, decode_tokens, skew, dtypes)
    kept = _JOBS.pop(key, None) or Job(config, spec, served, profile, draft, decode_tokens)
    _JOBS[key] = kept
    while len(_JOBS) > 1 and (len(_JOBS) > _JOBS_KEPT or Job.held > _STEPS_KEPT):
        _, evicted = _JOBS.popitem(last=False)
        evicted.kept = False
        Job.held -= len(evicted.steps)
    return kept


def timer(kept: Job, notes: dict):
    """The scheduler's timer(decodes, context, chunks) -> seconds: ``kept``'s step, its engine
    notes gathered in ``notes`` (in the order first met, as the step loop meets them)."""

    def seconds(n, context, chunks) -> float:
        found, step_notes = kept.seconds(n, context, tuple(sorted([(t, int(r.computed)) for r, t in chunks])))
        notes.update(step_notes)
        return found

    return seconds
