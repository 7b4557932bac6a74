"""lab_utils.routing: the host link, the floor of an offloaded request, the crossover batch, and
latency mixtures of routed requests."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab_utils import latency, routing

seconds_lists = st.lists(
    st.floats(1e-6, 10.0, allow_nan=False, allow_infinity=False), min_size=1, max_size=40
)


# --- pcie_bytes_per_s ------------------------------------------------------------------------


def test_pcie_4_x16_is_31_5_gb_per_s():
    assert routing.pcie_bytes_per_s(4, 16) == pytest.approx(16e9 * 16 * 128 / 130 / 8)
    assert routing.pcie_bytes_per_s(4) == pytest.approx(31.5e9, rel=1e-3)


def test_pcie_doubles_per_generation_and_scales_with_lanes():
    assert routing.pcie_bytes_per_s(5) == pytest.approx(2 * routing.pcie_bytes_per_s(4))
    assert routing.pcie_bytes_per_s(3) == pytest.approx(routing.pcie_bytes_per_s(4) / 2)
    assert routing.pcie_bytes_per_s(4, 8) == pytest.approx(routing.pcie_bytes_per_s(4, 16) / 2)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"generation": 6}, ValueError, "generation=6"),
        ({"generation": True}, TypeError, "generation"),
        ({"generation": 4.0}, TypeError, "generation"),
        ({"lanes": 3}, ValueError, "lanes=3"),
        ({"lanes": 0}, ValueError, "lanes=0"),
    ],
)
def test_pcie_refuses_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        routing.pcie_bytes_per_s(**kwargs)


# --- offload_floor ---------------------------------------------------------------------------

FLOOR = dict(
    flops=2e9,
    device_bytes=1e9,
    transfer_bytes=1e6,
    launches=10,
    launch_s=5e-6,
    peak_flops=1e12,
    bandwidth_bytes_per_s=1e12,
    link_bytes_per_s=1e10,
    framework_s=1e-4,
)


def test_offload_floor_parts():
    floor = routing.offload_floor(**FLOOR)
    assert floor.issue_s == pytest.approx(1e-4 + 10 * 5e-6)
    assert floor.transfer_s == pytest.approx(1e-6 / 1e-2)
    assert floor.work_s == pytest.approx(max(2e9 / 1e12, 1e9 / 1e12))  # compute bound: 2 ms
    assert floor.total_s == pytest.approx(floor.transfer_s + floor.work_s)
    assert floor.bound_by == "transfer + work"


def test_small_requests_are_bound_by_issuing():
    floor = routing.offload_floor(**{**FLOOR, "flops": 1e3, "device_bytes": 1e3, "transfer_bytes": 8})
    assert floor.total_s == floor.issue_s
    assert floor.bound_by == "issuing operations"


def test_memory_bound_work_uses_the_bandwidth():
    floor = routing.offload_floor(**{**FLOOR, "flops": 1.0, "device_bytes": 4e9})
    assert floor.work_s == pytest.approx(4e-3)


def test_framework_time_defaults_to_zero():
    kwargs = {k: v for k, v in FLOOR.items() if k != "framework_s"}
    assert routing.offload_floor(**kwargs).issue_s == pytest.approx(10 * 5e-6)


@pytest.mark.parametrize(
    "name, value, error",
    [
        ("flops", -1.0, ValueError),
        ("flops", "1", TypeError),
        ("launches", 0, ValueError),
        ("launches", 2.5, TypeError),
        ("peak_flops", 0.0, ValueError),
        ("link_bytes_per_s", math.inf, ValueError),
        ("launch_s", math.nan, ValueError),
        ("framework_s", True, TypeError),
    ],
)
def test_offload_floor_names_the_bad_parameter(name, value, error):
    with pytest.raises(error, match=name):
        routing.offload_floor(**{**FLOOR, name: value})


# --- crossover_batch -------------------------------------------------------------------------


def test_crossover_is_the_first_batch_from_which_the_gpu_stays_ahead():
    batches = [1, 4, 16, 64]
    assert routing.crossover_batch(batches, [1, 2, 4, 8], [3, 3, 3, 3]) == 16
    assert routing.crossover_batch(batches, [1, 2, 4, 8], [0.5, 3, 3, 3]) == 16  # a lucky point
    assert routing.crossover_batch(batches, [1, 2, 4, 8], [0.5, 1, 2, 4]) == 1
    assert routing.crossover_batch(batches, [1, 2, 4, 8], [9, 9, 9, 9]) is None
    assert routing.crossover_batch(batches, [1, 2, 4, 8], [3, 3, 3, 8]) is None  # a tie is no win


@pytest.mark.parametrize(
    "args, error, match",
    [
        (([], [], []), ValueError, "empty"),
        (([1, 2], [1.0], [1.0, 2.0]), ValueError, "one entry per batch"),
        (([2, 1], [1.0, 1.0], [1.0, 1.0]), ValueError, "strictly increasing"),
        (([1, 1], [1.0, 1.0], [1.0, 1.0]), ValueError, "strictly increasing"),
        (([0, 1], [1.0, 1.0], [1.0, 1.0]), ValueError, r"batches\[0\]"),
        (([1, 2], [1.0, 0.0], [1.0, 1.0]), ValueError, r"cpu_seconds\[1\]"),
        (([1, 2], [1.0, 1.0], [1.0, "x"]), TypeError, r"gpu_seconds\[1\]"),
    ],
)
def test_crossover_refuses_bad_input(args, error, match):
    with pytest.raises(error, match=match):
        routing.crossover_batch(*args)


# --- Route and mix ---------------------------------------------------------------------------


def test_the_seeds_hybrid_cluster():
    seed = routing.mix([routing.Route("CPU", 0.8, 0.005), routing.Route("GPU", 0.2, 0.200)])
    assert seed.mean_s == pytest.approx(0.044)
    assert seed.p50_s == 0.005
    assert seed.quantile(0.8) == 0.005
    assert seed.p95_s == seed.p99_s == seed.quantile(1.0) == 0.200
    assert seed.share_slower_than(0.050) == pytest.approx(0.2)
    assert seed.share_slower_than(0.200) == 0.0
    assert seed.share_slower_than(0.001) == pytest.approx(1.0)


def test_route_normalises_and_costs():
    route = routing.Route("short on CPU", 0.5, [0.001, 0.003], usd_per_hour=3.6, concurrency=2)
    assert route.latencies_s == (0.001, 0.003)
    assert route.mean_s == pytest.approx(0.002)
    assert route.cost_per_request == pytest.approx(0.002 * 3.6 / 3600 / 2)
    single = routing.Route("one", 1.0, 0.25)
    assert single.latencies_s == (0.25,) and single.cost_per_request == 0.0


def test_mix_cost_is_the_share_weighted_route_cost():
    # a: 0.01 s at $36/h ($0.01/s) = $1e-4; b: 0.10 s at $7.2/h ($0.002/s) = $2e-4
    m = routing.mix(
        [routing.Route("a", 0.25, 0.01, usd_per_hour=36.0), routing.Route("b", 0.75, 0.10, usd_per_hour=7.2)]
    )
    assert m.cost_per_request == pytest.approx(0.25 * 1e-4 + 0.75 * 2e-4)  # $1.75e-4
    assert m.cost_per_million_requests == pytest.approx(175.0)


@given(seconds_lists, st.floats(0.0, 1.0))
@settings(max_examples=60, deadline=None)
def test_one_route_quantiles_match_numpys_inverted_cdf(seconds, q):
    m = routing.mix(routing.Route("only", 1.0, seconds))
    assert m.quantile(q) == pytest.approx(np.quantile(seconds, q, method="inverted_cdf"))
    assert m.mean_s == pytest.approx(float(np.mean(seconds)))


@given(seconds_lists, seconds_lists, st.floats(0.0, 1.0))
@settings(max_examples=60, deadline=None)
def test_routes_weighted_by_their_sample_counts_pool_their_samples(first, second, q):
    total = len(first) + len(second)
    m = routing.mix(
        [routing.Route("a", len(first) / total, first), routing.Route("b", len(second) / total, second)]
    )
    pooled = first + second
    assert m.quantile(q) == pytest.approx(np.quantile(pooled, q, method="inverted_cdf"))
    assert m.mean_s == pytest.approx(float(np.mean(pooled)))


@given(seconds_lists, seconds_lists, st.floats(0.01, 0.99), st.floats(1e-6, 10.0))
@settings(max_examples=60, deadline=None)
def test_share_slower_than_agrees_with_the_samples(first, second, share, threshold):
    m = routing.mix([routing.Route("a", share, first), routing.Route("b", 1 - share, second)])
    expected = share * np.mean(np.array(first) > threshold) + (1 - share) * np.mean(
        np.array(second) > threshold
    )
    assert m.share_slower_than(threshold) == pytest.approx(expected, abs=1e-9)


def test_a_route_with_no_share_does_not_move_the_percentiles():
    m = routing.mix([routing.Route("used", 1.0, 0.01), routing.Route("idle", 0.0, 5.0)])
    assert m.quantile(1.0) == 0.01
    assert m.share_slower_than(0.02) == 0.0


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"name": "", "share": 0.5, "latencies_s": 1.0}, ValueError, "name"),
        ({"name": "r", "share": 1.5, "latencies_s": 1.0}, ValueError, "share=1.5"),
        ({"name": "r", "share": -0.1, "latencies_s": 1.0}, ValueError, "share"),
        ({"name": "r", "share": 0.5, "latencies_s": []}, ValueError, "latencies_s is empty"),
        ({"name": "r", "share": 0.5, "latencies_s": [0.1, 0.0]}, ValueError, r"latencies_s\[1\]"),
        ({"name": "r", "share": 0.5, "latencies_s": "fast"}, TypeError, "latencies_s"),
        ({"name": "r", "share": 0.5, "latencies_s": 1.0, "usd_per_hour": -1.0}, ValueError, "usd_per_hour"),
        ({"name": "r", "share": 0.5, "latencies_s": 1.0, "concurrency": 0}, ValueError, "concurrency=0"),
    ],
)
def test_route_refuses_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        routing.Route(**kwargs)


def test_mix_refuses_shares_that_do_not_add_up_and_other_bad_input():
    with pytest.raises(ValueError, match="add up to 1"):
        routing.mix([routing.Route("a", 0.5, 1.0), routing.Route("b", 0.4, 1.0)])
    with pytest.raises(ValueError, match="empty"):
        routing.mix([])
    with pytest.raises(TypeError, match="Route"):
        routing.mix([("a", 1.0, 1.0)])
    with pytest.raises(TypeError, match="iterable"):
        routing.mix(3)
    m = routing.mix([routing.Route("a", 1.0, 1.0)])
    with pytest.raises(ValueError, match="q=1.5"):
        m.quantile(1.5)


# --- latency.request_latencies_s -----------------------------------------------------------------


def test_request_latencies_time_each_call_after_the_warmup():
    calls = []
    latencies = latency.request_latencies_s(lambda: calls.append(1), requests=7, device="cpu", warmup=2)
    assert len(latencies) == 7 and len(calls) == 9
    assert all(t >= 0 for t in latencies)


def test_request_latencies_stop_at_the_time_limit():
    import time

    latencies = latency.request_latencies_s(
        lambda: time.sleep(0.01), requests=1000, device="cpu", warmup=0, max_seconds=0.05
    )
    assert 1 <= len(latencies) < 20
    assert min(latencies) >= 0.009


def test_request_latencies_refuse_bad_input():
    with pytest.raises(TypeError, match="fn"):
        latency.request_latencies_s(3)
    with pytest.raises(ValueError, match="requests=0"):
        latency.request_latencies_s(lambda: None, requests=0, device="cpu")
    with pytest.raises(ValueError, match="max_seconds"):
        latency.request_latencies_s(lambda: None, device="cpu", max_seconds=0)


def test_routing_re_exports_no_measuring_name():
    assert not hasattr(routing, "request_latencies_s")  # measuring lives in lab_utils.latency
