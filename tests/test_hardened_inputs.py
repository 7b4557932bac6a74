"""Hardened inputs across the calculators: bad values raise only ValueError/TypeError naming
the parameter, and results move the right way as inputs grow (property-based, hypothesis)."""

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab_utils import checks, economics, hardware, memory, parallel, prices, roofline, serverless, serving

settings.register_profile(
    "hardened", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("hardened")

BAD_NUMBERS = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, -1, -1e-9, "1", None, [1.0], True, object()]),
    st.floats(max_value=-1e-300, allow_nan=False, allow_infinity=False),
)
"""Values no positive quantity (a count of parameters, a price, a bandwidth) may take."""
BAD_COUNTS = st.one_of(
    st.sampled_from([0, -1, 2.5, 1.0, "2", None, True, math.nan]), st.integers(max_value=0)
)
ANYTHING = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=3),
    st.just(object()),
)
SIZES = st.floats(min_value=1.0, max_value=1e15, allow_nan=False)
POSITIVE = st.floats(min_value=1e-6, max_value=1e12, allow_nan=False)


def raises_naming(name, call):
    """``call()`` raises ValueError or TypeError whose message names ``name``."""
    with pytest.raises((ValueError, TypeError)) as caught:
        call()
    assert name in str(caught.value), (name, str(caught.value))


def _given(value):
    """A bad value as given by a caller; None, which means "the default", as the string 'none'."""
    return "none" if value is None else value


def at_most(a, b):
    return a <= b * (1 + 1e-12) + 1e-300


# --- each positive input refuses NaN, inf, negatives, wrong types ----------------------------

POSITIVE_INPUTS = {
    "economics.training_flops n_params": (lambda v: economics.training_flops(v, 1e9), "n_params"),
    "economics.training_flops n_tokens": (lambda v: economics.training_flops(1e9, v), "n_tokens"),
    "economics.training_hours mfu": (lambda v: economics.training_hours(1e20, peak_flops=1e15, mfu=v), "mfu"),
    "economics.cost_per_million price": (lambda v: economics.cost_per_million_tokens(v, 100), "usd_per_hour"),
    "economics.cost_per_million tokens/s": (
        lambda v: economics.cost_per_million_tokens(2, v),
        "tokens_per_s",
    ),
    "economics.api_cost input": (
        lambda v: economics.api_cost(v, 1, price_in_per_million=1, price_out_per_million=1),
        "input_tokens",
    ),
    "economics.decode bound bandwidth": (
        lambda v: economics.decode_tokens_per_s_bound(8e9, bytes_per_param=2, bandwidth_bytes_per_s=v),
        "bandwidth_bytes_per_s",
    ),
    "economics.serving_costs tokens": (
        lambda v: economics.serving_costs(v, api_cost_per_million=1, usd_per_hour=2, tokens_per_s=100),
        "tokens_per_month",
    ),
    "economics.breakeven api": (
        lambda v: economics.breakeven_tokens_per_month(
            api_cost_per_million=v, usd_per_hour=2, tokens_per_s=100
        ),
        "api_cost_per_million",
    ),
    "economics.fine_tune_estimate price": (
        lambda v: economics.fine_tune_estimate(  # None: the default price
            "llama-3.1-8b", 1e8, usd_per_gpu_hour=_given(v)
        ),
        "usd_per_gpu_hour",
    ),
    "economics.range_verdict claimed": (lambda v: economics.range_verdict(v, 1, 2), "claimed"),
    "memory.weight_bytes": (lambda v: memory.weight_bytes(v), "n_params"),
    "memory.training_state_bytes": (lambda v: memory.training_state_bytes(v), "n_params"),
    "memory.fits n_bytes": (lambda v: memory.fits(v, "T4"), "n_bytes"),
    "memory.gpus_needed n_bytes": (lambda v: memory.gpus_needed(v, "T4"), "n_bytes"),
    # None is the cuda_context_bytes assumption (read when asked), so another bad value stands in
    "memory.fits reserve": (
        lambda v: memory.fits(1e9, "T4", reserve_bytes=-1.0 if v is None else v),
        "reserve_bytes",
    ),
    "memory.kv_cache bytes_per_value": (
        lambda v: memory.kv_cache_bytes(n_layers=2, n_kv_heads=2, head_dim=8, seq_len=4, bytes_per_value=v),
        "bytes_per_value",
    ),
    "roofline.arithmetic_intensity": (lambda v: roofline.arithmetic_intensity(1e9, v), "bytes"),
    "roofline.attainable peak": (lambda v: roofline.attainable_flops(v, 1e9, 1), "peak_flops"),
    "roofline.attainable bandwidth": (
        lambda v: roofline.attainable_flops(1e12, v, 1),
        "bandwidth_bytes_per_s",
    ),
    "roofline.matmul_bytes": (lambda v: roofline.matmul_bytes(8, 8, 8, v), "bytes_per_element"),
    "roofline.Point": (lambda v: roofline.Point("x", 1.0, v), "flops_per_s"),
    "serverless.pod_cost price": (lambda v: serverless.pod_cost(v, 10), "usd_per_hour"),
    "serverless.pod_cost duration": (lambda v: serverless.pod_cost(1, v), "duration_s"),
    "serverless.poisson rate": (lambda v: serverless.poisson_arrivals(v, 10), "rate_per_s"),
    "serverless.simulate service": (
        lambda v: serverless.simulate(
            [0.0], service_s=v, cold_start_s=1, idle_timeout_s=1, max_workers=1, price_per_worker_s=1
        ),
        "service_s",
    ),
    "parallel.amdahl fraction": (lambda v: parallel.amdahl_speedup(v, 4), "parallel_fraction"),
    "parallel.amdahl_limit": (lambda v: parallel.amdahl_limit(v), "parallel_fraction"),
}


@pytest.mark.parametrize("case", sorted(POSITIVE_INPUTS))
@given(value=BAD_NUMBERS)
def test_positive_inputs_refuse_bad_numbers(case, value):
    call, name = POSITIVE_INPUTS[case]
    raises_naming(name, lambda: call(value))


COUNT_INPUTS = {
    "economics.training_hours n_devices": (
        lambda v: economics.training_hours(1e20, peak_flops=1e15, mfu=0.4, n_devices=v),
        "n_devices",
    ),
    "economics.decode bound batch": (
        lambda v: economics.decode_tokens_per_s_bound(
            8e9, bytes_per_param=2, bandwidth_bytes_per_s=1e12, batch=v
        ),
        "batch",
    ),
    # None is each one's default (an assumption): the other bad counts are refused
    "memory.job_estimate batch": (lambda v: memory.job_estimate("llama-3.1-8b", batch=_given(v)), "batch"),
    "memory.job_estimate seq_len": (
        lambda v: memory.job_estimate("llama-3.1-8b", seq_len=_given(v)),
        "seq_len",
    ),
    "memory.activation_bytes n_layers": (
        lambda v: memory.activation_bytes(n_layers=v, hidden=8, n_heads=2, seq_len=4, batch=1),
        "n_layers",
    ),
    "roofline.matmul_flops": (lambda v: roofline.matmul_flops(v, 8, 8), "m"),
    "parallel.amdahl workers": (lambda v: parallel.amdahl_speedup(0.5, v), "workers"),
    "parallel.gustafson workers": (lambda v: parallel.gustafson_speedup(0.5, v), "workers"),
    "serverless.simulate max_workers": (
        lambda v: serverless.simulate(
            [0.0], service_s=1, cold_start_s=1, idle_timeout_s=1, max_workers=v, price_per_worker_s=1
        ),
        "max_workers",
    ),
    "serverless.batch_arrivals": (lambda v: serverless.batch_arrivals(v if v != 0 else -1), "n_requests"),
}


@pytest.mark.parametrize("case", sorted(COUNT_INPUTS))
@given(value=BAD_COUNTS)
def test_counts_refuse_zero_negatives_and_non_integers(case, value):
    call, name = COUNT_INPUTS[case]
    raises_naming(name, lambda: call(value))


NAME_INPUTS = {
    "hardware.get": (hardware.get, "name"),
    "roofline.roof_of": (roofline.roof_of, "name"),
    "prices.api_price": (prices.api_price, "name"),
    "prices.hourly_price": (prices.hourly_price, "name"),
    "prices.serverless_price": (prices.serverless_price, "name"),
    "memory.job_estimate model": (lambda v: memory.job_estimate(v), "name"),
    "memory.job_estimate method": (lambda v: memory.job_estimate("llama-3.1-8b", v), "method"),
    "memory.weight_bytes precision": (lambda v: memory.weight_bytes(1e9, v), "precision"),
    "economics.training_flops method": (lambda v: economics.training_flops(1e9, 1e9, v), "method"),
    "economics.fine_tune_estimate gpu": (
        lambda v: economics.fine_tune_estimate(  # None: the default_gpu assumption
            "llama-3.1-8b", 1e8, gpu="Z80" if v is None else v, usd_per_gpu_hour=1
        ),
        "name",
    ),
    "hardware.catalog kind": (lambda v: hardware.catalog("tpu" if v is None else v), "kind"),  # None: all
}


@pytest.mark.parametrize("case", sorted(NAME_INPUTS))
@given(
    value=st.one_of(
        st.sampled_from(["Z80", "gpt-9", "", "  ", "fp9", 3, None, 1.5]),
        st.text(alphabet="qxzjw", min_size=6, max_size=12),
    )
)
def test_unknown_names_are_refused(case, value):
    call, name = NAME_INPUTS[case]
    raises_naming(name, lambda: call(value))


# --- nothing else escapes, whatever the input -------------------------------------------------

ANY_CALLS = {
    "hardware.get": lambda a, b: hardware.get(a),
    "roofline.attainable_flops": lambda a, b: roofline.attainable_flops(a, b, a),
    "roofline.matmul_intensity": lambda a, b: roofline.matmul_intensity(a, a, a, b),
    "memory.weight_bytes": lambda a, b: memory.weight_bytes(a, b),
    "memory.training_state_bytes": lambda a, b: memory.training_state_bytes(a, data_parallel=b),
    "memory.job_estimate": lambda a, b: memory.job_estimate("llama-3.1-8b", batch=a, seq_len=b),
    "memory.gpus_needed": lambda a, b: memory.gpus_needed(a, b),
    "economics.cost_per_million_tokens": lambda a, b: economics.cost_per_million_tokens(a, b),
    "economics.training_hours": lambda a, b: economics.training_hours(a, peak_flops=b, mfu=0.5, n_devices=a),
    "serving.decode_step_s": lambda a, b: serving.decode_step_s(
        "llama-3.1-8b", device="T4", batch=a, context_len=b
    ),
    "economics.breakeven": lambda a, b: economics.breakeven_tokens_per_month(
        api_cost_per_million=a, usd_per_hour=b, tokens_per_s=a, fine_tune_cost=b, always_on=True
    ),
    "economics.range_verdict": lambda a, b: economics.range_verdict(a, 1, 2, tolerance=b),
    "serverless.percentile": lambda a, b: serverless.percentile([1.0, 2.0], a),
    "serverless.pod_cost": lambda a, b: serverless.pod_cost(a, b),
    "serverless.bursty_arrivals": lambda a, b: serverless.bursty_arrivals(
        burst_size=a if not isinstance(a, int) or a < 100 else 100, burst_every_s=b, duration_s=1
    ),
    "parallel.amdahl_speedup": lambda a, b: parallel.amdahl_speedup(a, b),
    "parallel.gustafson_speedup": lambda a, b: parallel.gustafson_speedup(a, b),
    "parallel.fit_parallel_fraction": lambda a, b: parallel.fit_parallel_fraction(a, b),
}


@pytest.mark.parametrize("case", sorted(ANY_CALLS))
@given(a=ANYTHING, b=ANYTHING)
def test_only_value_and_type_errors_escape(case, a, b):
    try:
        ANY_CALLS[case](a, b)
    except (ValueError, TypeError) as error:
        assert str(error), "an error must say what was wrong"


# --- results move the right way ----------------------------------------------------------------


@given(small=SIZES, extra=SIZES, precision=st.sampled_from(memory.TRAINING_PRECISIONS))
def test_more_parameters_never_need_less_memory(small, extra, precision):
    big = small + extra
    assert at_most(memory.weight_bytes(small, "bf16"), memory.weight_bytes(big, "bf16"))
    assert at_most(
        memory.training_state_bytes(small, precision).total_bytes,
        memory.training_state_bytes(big, precision).total_bytes,
    )
    assert memory.gpus_needed(small, "H100 SXM") <= memory.gpus_needed(big, "H100 SXM")


@given(
    batch=st.integers(1, 64),
    more=st.integers(0, 64),
    seq=st.integers(1, 8192),
    method=st.sampled_from(["inference", "full", "lora", "qlora"]),
)
def test_bigger_batches_and_contexts_never_need_less_memory(batch, more, seq, method):
    precision = memory.precisions_for(method)[0]
    base = memory.job_estimate("llama-3.1-8b", method, precision, batch=batch, seq_len=seq).total_bytes
    assert at_most(
        base,
        memory.job_estimate("llama-3.1-8b", method, precision, batch=batch + more, seq_len=seq).total_bytes,
    )
    assert at_most(
        base,
        memory.job_estimate("llama-3.1-8b", method, precision, batch=batch, seq_len=seq + more).total_bytes,
    )


@given(price=st.floats(0, 1e4), raise_by=st.floats(0, 1e4), tokens_per_s=POSITIVE)
def test_a_higher_price_never_costs_less(price, raise_by, tokens_per_s):
    assert at_most(
        economics.cost_per_million_tokens(price, tokens_per_s),
        economics.cost_per_million_tokens(price + raise_by, tokens_per_s),
    )
    assert at_most(serverless.pod_cost(price, 3600), serverless.pod_cost(price + raise_by, 3600))
    assert at_most(
        economics.fine_tune_estimate("llama-3.1-8b", 1e8, usd_per_gpu_hour=price).cost_usd,
        economics.fine_tune_estimate("llama-3.1-8b", 1e8, usd_per_gpu_hour=price + raise_by).cost_usd,
    )


@given(tokens=st.floats(0, 1e12), more=st.floats(0, 1e12), price=st.floats(0, 100))
def test_more_tokens_never_cost_less(tokens, more, price):
    assert at_most(
        economics.api_cost(tokens, tokens, price_in_per_million=price, price_out_per_million=price),
        economics.api_cost(tokens + more, tokens, price_in_per_million=price, price_out_per_million=price),
    )
    low = economics.serving_costs(tokens, api_cost_per_million=price, usd_per_hour=2, tokens_per_s=500)
    high = economics.serving_costs(
        tokens + more, api_cost_per_million=price, usd_per_hour=2, tokens_per_s=500
    )
    for field in ("api_per_month_usd", "pay_per_use_per_month_usd", "always_on_per_month_usd"):
        assert at_most(getattr(low, field), getattr(high, field))


@given(n_params=st.floats(1e6, 1e12), tokens=st.floats(1, 1e13), more=st.floats(0, 1e13))
def test_more_tokens_or_parameters_never_train_faster(n_params, tokens, more):
    assert at_most(
        economics.training_flops(n_params, tokens), economics.training_flops(n_params, tokens + more)
    )
    assert at_most(economics.training_flops(n_params, tokens), economics.training_flops(n_params * 2, tokens))


@given(bandwidth=POSITIVE, more=POSITIVE, batch=st.integers(1, 256), n_params=st.floats(1e6, 1e12))
def test_more_bandwidth_never_lowers_a_decode_bound(bandwidth, more, batch, n_params):
    bound = economics.decode_tokens_per_s_bound(
        n_params, bytes_per_param=2, bandwidth_bytes_per_s=bandwidth, batch=batch, peak_flops=1e15
    )
    assert at_most(
        bound,
        economics.decode_tokens_per_s_bound(
            n_params, bytes_per_param=2, bandwidth_bytes_per_s=bandwidth + more, batch=batch, peak_flops=1e15
        ),
    )
    assert at_most(
        roofline.attainable_flops(1e15, bandwidth, 10), roofline.attainable_flops(1e15, bandwidth + more, 10)
    )


@given(intensity=POSITIVE, more=POSITIVE, peak=POSITIVE, bandwidth=POSITIVE)
def test_attainable_flops_grow_with_intensity_and_never_pass_the_peak(intensity, more, peak, bandwidth):
    low = roofline.attainable_flops(peak, bandwidth, intensity)
    assert at_most(low, roofline.attainable_flops(peak, bandwidth, intensity + more))
    assert at_most(low, peak)


@given(fraction=st.floats(0, 1), workers=st.integers(1, 10**6), more=st.integers(0, 10**6))
def test_more_workers_never_slow_down_and_amdahl_has_a_limit(fraction, workers, more):
    speedup = parallel.amdahl_speedup(fraction, workers)
    assert at_most(speedup, parallel.amdahl_speedup(fraction, workers + more))
    assert at_most(speedup, parallel.amdahl_limit(fraction))
    assert at_most(speedup, parallel.gustafson_speedup(fraction, workers))


@given(name=st.sampled_from([s.name for s in hardware.catalog()]))
def test_every_catalog_device_has_a_dated_source_and_sane_figures(name):
    spec = hardware.get(name)
    assert spec.source and spec.source_date
    for dtype, flops in spec.peak_flops.items():
        assert math.isfinite(flops) and flops > 0
        if spec.bandwidth_bytes_per_s:
            assert spec.ridge_point(dtype) > 0


# --- the shared checks themselves ---------------------------------------------------------------


@given(value=st.floats(allow_nan=True, allow_infinity=True))
def test_checks_number_accepts_exactly_the_finite_positive_floats(value):
    if math.isfinite(value) and value > 0:
        assert checks.number("x", value) == value
    else:
        raises_naming("x=", lambda: checks.number("x", value))


@given(value=st.one_of(st.integers(-5, 5), st.floats(-5, 5), st.booleans()))
def test_checks_count(value):
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        assert checks.count("n", value) == value
    else:
        raises_naming("n", lambda: checks.count("n", value))


def test_a_float_count_is_both_a_type_and_a_value_error():
    with pytest.raises(TypeError):
        checks.count("n", 2.5)
    with pytest.raises(ValueError):
        checks.count("n", 2.5)
