"""serverless.simulate on hand-worked cases, its invariants, and the traffic generators."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab_utils import assumptions, serverless

# service 2 s, cold start 10 s, idle timeout 5 s, $0.001 per worker-second
BASE = dict(service_s=2.0, cold_start_s=10.0, idle_timeout_s=5.0, max_workers=3, price_per_worker_s=0.001)


def run(arrivals, **overrides):
    return serverless.simulate(arrivals, **{**BASE, **overrides})


def test_one_request_pays_a_cold_start_and_the_idle_window():
    result = run([0.0])
    assert result.latencies_s == (12.0,)  # cold start 10 + service 2
    assert result.cold_starts == 1
    assert result.billed_s == 17  # start 0 -> job ends 12 -> warm until 17
    assert result.cost == pytest.approx(0.017)
    assert result.p50_s == result.p95_s == 12.0


def test_a_second_request_within_the_idle_window_finds_the_worker_warm():
    result = run([0.0, 14.0])
    assert result.latencies_s == (12.0, 2.0)
    assert result.cold_starts == 1
    assert result.billed_s == 21  # 0 -> 16 (second job) + 5 idle


def test_a_request_exactly_at_the_end_of_the_idle_window_is_still_warm():
    result = run([0.0, 17.0])
    assert result.cold_starts == 1
    assert result.latencies_s == (12.0, 2.0)


def test_a_second_request_after_the_idle_window_pays_a_new_cold_start():
    result = run([0.0, 20.0])
    assert result.latencies_s == (12.0, 12.0)
    assert result.cold_starts == 2
    assert result.billed_s == 17 + 17


def test_more_requests_than_workers_wait_first_come_first_served():
    result = run([0.0, 1.0, 2.0], max_workers=1)
    assert result.latencies_s == (12.0, 13.0, 14.0)  # jobs end at 12, 14, 16
    assert result.cold_starts == 1
    assert result.billed_s == 21
    assert result.p50_s == 13.0
    assert result.p95_s == pytest.approx(13.9)  # between 13 and 14, at 0.95 x 2 = 1.9


def test_simultaneous_requests_start_workers_up_to_the_limit():
    result = run([0.0, 0.0, 0.0], max_workers=2)
    assert result.latencies_s == (12.0, 12.0, 14.0)
    assert result.cold_starts == 2
    assert result.billed_s == 17 + 19


def test_lifetimes_are_rounded_up_to_whole_seconds_per_worker():
    result = serverless.simulate(
        [0.0, 0.0], service_s=0.5, cold_start_s=0.2, idle_timeout_s=0.1, max_workers=2, price_per_worker_s=1.0
    )
    assert result.billed_s == 2  # two lifetimes of 0.8 s, each billed 1 s
    assert result.cost == 2.0


def test_latencies_follow_the_order_of_the_arrivals_given():
    result = run([20.0, 0.0])
    assert result.latencies_s == (12.0, 12.0)
    result = run([14.0, 0.0])
    assert result.latencies_s == (2.0, 12.0)


def test_active_workers_are_warm_from_the_start_and_billed_for_the_period():
    result = run([5.0], active_workers=1, active_price_per_worker_s=0.0005)
    assert result.latencies_s == (2.0,)
    assert result.cold_starts == 0 and result.billed_s == 0
    assert result.active_billed_s == 7  # until the last job ends at 7 s
    assert result.cost == pytest.approx(7 * 0.0005)
    day = run([5.0], active_workers=1, active_price_per_worker_s=0.0005, duration_s=86_400)
    assert day.active_billed_s == 86_400


def test_no_requests_cost_nothing_and_have_no_percentiles():
    result = run([])
    assert result.cost == 0 and result.cold_starts == 0 and result.latencies_s == ()
    assert math.isnan(result.p50_s) and math.isnan(result.p95_s)


@settings(max_examples=60, deadline=None)
@given(
    arrivals=st.lists(st.floats(0, 100, allow_nan=False), max_size=30),
    service=st.floats(0.01, 5),
    cold=st.floats(0, 20),
    idle=st.floats(0, 30),
    workers=st.integers(1, 5),
)
def test_invariants(arrivals, service, cold, idle, workers):
    result = serverless.simulate(
        arrivals,
        service_s=service,
        cold_start_s=cold,
        idle_timeout_s=idle,
        max_workers=workers,
        price_per_worker_s=0.002,
    )
    assert len(result.latencies_s) == len(arrivals)
    assert all(latency >= service - 1e-9 for latency in result.latencies_s)
    assert all(latency <= service + cold + 1e-9 for latency in result.latencies_s) or len(arrivals) > workers
    assert (result.cold_starts >= 1) == bool(arrivals)
    assert result.cost == pytest.approx(result.billed_s * 0.002)
    assert result.busy_s == pytest.approx(len(arrivals) * service)  # one request at a time
    busy_s = len(arrivals) * service + result.cold_starts * cold
    assert result.billed_s >= busy_s - 1e-6  # every second of work and start-up is paid


@settings(max_examples=60, deadline=None)
@given(
    arrivals=st.lists(st.floats(0, 100, allow_nan=False), max_size=30),
    service=st.floats(0.01, 5),
    slowdown=st.floats(0, 1),
    cold=st.floats(0, 20),
    idle=st.floats(0, 30),
    workers=st.integers(1, 4),
    concurrency=st.integers(1, 4),
)
def test_invariants_with_concurrency(arrivals, service, slowdown, cold, idle, workers, concurrency):
    """Slots per worker, each request taking longer in a larger batch (as in a serving engine):
    every request still takes at least its time alone, every second of work and start-up is
    paid, and one slot is the plain simulation."""

    def service_s(in_flight):
        return service * (1 + slowdown * (in_flight - 1))

    common = dict(cold_start_s=cold, idle_timeout_s=idle, max_workers=workers, price_per_worker_s=0.002)
    batched = serverless.simulate(arrivals, service_s=service_s, concurrency=concurrency, **common)
    alone = serverless.simulate(arrivals, service_s=service, **common)
    assert len(batched.latencies_s) == len(arrivals)
    assert all(latency >= service - 1e-9 for latency in batched.latencies_s)
    assert batched.busy_s <= sum(service_s(concurrency) for _ in arrivals) + 1e-9
    assert batched.billed_s >= batched.busy_s + batched.cold_starts * cold - 1e-6
    for latency, wait, in_flight in zip(batched.latencies_s, batched.waits_s, batched.in_flight, strict=True):
        assert 1 <= in_flight <= concurrency and wait >= 0
        assert latency == pytest.approx(wait + service_s(in_flight))  # its wait, then its batch's time
    if concurrency == 1:
        assert batched == alone


def test_a_worker_time_simulated_apart_is_added_to_each_wait_worked_by_hand():
    """One worker, one slot, ready 1 s after the first arrival, 2 s a request: the requests at
    0, 0.5 and 1 s start at 1, 3 and 5 s (waits 1, 2.5 and 4 s), the worker busy from 1 s to
    7 s: 3 requests over 6 busy worker-seconds, 0.5 a second. With times inside the worker of
    0.25 and 0.75 s taken in turn, the latencies are 1.25, 3.25 and 4.25 s."""
    result = serverless.simulate(
        [0.0, 0.5, 1.0],
        service_s=2.0,
        cold_start_s=1.0,
        idle_timeout_s=10.0,
        max_workers=1,
        price_per_worker_s=0.0,
    )
    assert result.waits_s == (1.0, 2.5, 4.0) and result.in_flight == (1, 1, 1)
    assert serverless.requests_per_busy_worker_s(result) == 0.5
    assert serverless.shared_start_share(result) == 0.0
    assert serverless.latencies_with_worker_times_s(result, [0.25, 0.75]) == (1.25, 3.25, 4.25)
    with pytest.raises(ValueError, match="in_worker_s"):
        serverless.latencies_with_worker_times_s(result, [])


def test_a_request_joining_a_busy_worker_counts_as_shared():
    """Two slots, no cold start: the request at 0.5 s joins the one started at 0 s (2 in flight)."""
    result = serverless.simulate(
        [0.0, 0.5],
        service_s=lambda n: 2.0 * n,
        concurrency=2,
        cold_start_s=0.0,
        idle_timeout_s=10.0,
        max_workers=1,
        price_per_worker_s=0.0,
    )
    assert result.in_flight == (1, 2) and result.waits_s == (0.0, 0.0)
    assert serverless.shared_start_share(result) == 0.5
    assert serverless.requests_per_busy_worker_s(result) == pytest.approx(2 / 4.5)  # busy 0 to 4.5 s


def test_a_worker_with_two_slots_serves_two_requests_at_once():
    result = run([0.0, 0.0, 0.0], max_workers=1, concurrency=2)
    assert result.latencies_s == (12.0, 12.0, 14.0)  # two in 10 -> 12, the third waits for a slot
    assert result.cold_starts == 1
    assert result.billed_s == 19  # 0 -> 14, + 5 idle
    assert result.busy_s == 4.0  # serving from 10 to 14, two at once for the first 2 s


def test_a_booting_worker_is_room_for_as_many_requests_as_it_has_slots():
    result = run([0.0, 1.0, 2.0], concurrency=2)
    # 0 starts worker 1 (ready at 10, two slots); 1 waits for its second slot, no new worker;
    # 2 finds no room and starts worker 2 (ready at 12), but worker 1's slot frees at 12 first
    assert result.cold_starts == 2
    assert result.latencies_s == (12.0, 11.0, 12.0)
    assert result.billed_s == (14 + 5) + (12 + 5 - 2)  # worker 2 boots and idles, and is billed


def test_a_request_takes_the_time_of_the_batch_it_joins():
    def service_s(in_flight):  # 2 s alone, 3 s beside another
        return {1: 2.0, 2: 3.0}[in_flight]

    result = run([0.0, 0.0, 11.0, 20.0], max_workers=1, concurrency=2, service_s=service_s)
    # first: alone at 10 -> 12; second joins it -> 13; third at 11, slot free at 12, joins the
    # second -> 15; fourth at 20 finds the worker idle -> 22
    assert result.latencies_s == (12.0, 13.0, 4.0, 2.0)
    assert result.billed_s == 27  # 0 -> 22, + 5 idle
    assert result.busy_s == 12.0 - 10.0 + 15.0 - 12.0 + 2.0  # 10 -> 15 and 20 -> 22


def test_busy_time_adds_requests_started_at_once_in_order_of_their_ends():
    # Two start at 0.1 on an always-on worker: the second, in a batch of two, ends first. The busy
    # time adds them in order of start, then end (simulate sums it as requests come, and goes
    # again keeping each request where they come in the other order): 0.1 -> 0.2, then -> 0.8.
    first_end, second_end = 0.1 + 0.7, 0.1 + 0.1
    result = serverless.simulate(
        [0.1, 0.1],
        service_s={1: 0.7, 2: 0.1}.__getitem__,
        cold_start_s=0.0,
        idle_timeout_s=0.0,
        max_workers=1,
        price_per_worker_s=0.0,
        active_workers=1,
        concurrency=2,
    )
    assert result.busy_s == (second_end - 0.1) + (first_end - second_end) != first_end - 0.1


def test_without_cold_starts_or_limits_every_latency_is_the_service_time():
    result = serverless.simulate(
        [0, 0.1, 0.2, 5, 5],
        service_s=1.0,
        cold_start_s=0.0,
        idle_timeout_s=0.0,
        max_workers=10,
        price_per_worker_s=0.0,
    )
    assert result.latencies_s == (1.0,) * 5


@pytest.mark.parametrize(
    "overrides, error, name",
    [
        ({"service_s": 0}, ValueError, "service_s"),
        ({"cold_start_s": -1}, ValueError, "cold_start_s"),
        ({"idle_timeout_s": math.inf}, ValueError, "idle_timeout_s"),
        ({"max_workers": 0}, ValueError, "max_workers"),
        ({"max_workers": 2.5}, ValueError, "max_workers"),
        ({"price_per_worker_s": "free"}, TypeError, "price_per_worker_s"),
        ({"active_workers": 4}, ValueError, "active_workers"),
        ({"concurrency": 0}, ValueError, "concurrency"),
        ({"service_s": lambda in_flight: 0.0}, ValueError, r"service_s\(1\)"),
        (
            {"service_s": lambda in_flight: 1.0 if in_flight == 1 else -1.0, "concurrency": 3},
            ValueError,
            r"service_s\(3\)",
        ),
    ],
)
def test_bad_parameters_are_named(overrides, error, name):
    with pytest.raises(error, match=name):
        run([0.0], **overrides)


def test_bad_arrival_times_are_refused():
    with pytest.raises(ValueError, match=r"arrival_times_s\[1\]=-1\.0"):
        run([0.0, -1.0])
    with pytest.raises(TypeError, match="arrival_times_s"):
        run(["soon"])


def test_pod_cost_bills_each_started_second():
    assert serverless.pod_cost(2.69, 3600) == pytest.approx(2.69)
    assert serverless.pod_cost(3.6, 0.5) == pytest.approx(0.001)
    with pytest.raises(ValueError, match="duration_s"):
        serverless.pod_cost(1.0, -5)


def test_poisson_arrivals_have_the_asked_rate_and_are_reproducible():
    times = serverless.poisson_arrivals(2.0, 5_000, seed=1)
    assert len(times) / 5_000 == pytest.approx(2.0, rel=0.05)
    assert times == serverless.poisson_arrivals(2.0, 5_000, seed=1)
    assert all(0 <= a < b < 5_000 for a, b in zip(times, times[1:]))
    assert serverless.poisson_arrivals(0.0, 100) == ()


def test_bursty_and_batch_arrivals():
    bursts = serverless.bursty_arrivals(burst_size=10, burst_every_s=60, duration_s=300, spread_s=2, seed=3)
    assert len(bursts) == 50
    assert all(k * 60 <= t <= k * 60 + 2 for k in range(5) for t in bursts[10 * k : 10 * k + 10])
    assert serverless.batch_arrivals(3, start_s=100, spacing_s=0.5) == (100.0, 100.5, 101.0)


def test_percentile_matches_linear_interpolation():
    assert serverless.percentile([1, 2, 3, 4], 50) == 2.5
    assert serverless.percentile([10], 95) == 10
    with pytest.raises(ValueError, match="q="):
        serverless.percentile([1], 101)


def test_a_busy_worker_that_frees_first_takes_the_queue_head_while_a_new_one_still_boots():
    # t=0: worker 1 boots (ready 10), serves 10-12; t=13: it is idle, serves 13-15;
    # t=14: it is busy, so worker 2 boots (ready 24), but worker 1 frees at 15 and serves 15-17.
    result = run([0.0, 13.0, 14.0], max_workers=2)
    assert result.latencies_s == (12.0, 2.0, 3.0)
    assert result.cold_starts == 2
    assert result.billed_s == 22 + 15  # worker 1: 0 -> 17 + 5 idle; worker 2: 14 -> 24 ready + 5 idle


def test_a_new_worker_ready_before_the_busy_one_frees_takes_the_waiting_request():
    # service 20 s, cold start 5 s: worker 1 serves 5-25; the request at 11 boots worker 2 (ready 16)
    result = run([0.0, 11.0], max_workers=2, service_s=20.0, cold_start_s=5.0)
    assert result.latencies_s == (25.0, 25.0)
    assert result.billed_s == 30 + 30  # 0 -> 25 + 5 and 11 -> 36 + 5
    assert result.busy_s == 40.0


def test_cost_is_a_read_only_alias_of_cost_usd():
    result = run([0.0])
    assert result.cost == result.cost_usd == pytest.approx(0.017)
    with pytest.raises(AttributeError):
        result.cost = 1.0


def test_cold_start_adds_its_parts_and_costs_whole_seconds():
    start = serverless.cold_start(
        4e9,
        image_cached=False,
        image_pull_s=30.0,
        container_start_s=4.0,
        cuda_init_s=1.5,
        weight_load_bytes_per_s=2e9,
        engine_start_s=20.0,
        model_cached=True,
        restore_s=2.0,
        restore_hit_rate=0.0,
    )
    assert start.parts == (
        ("image pull", 30.0),
        ("container start", 4.0),
        ("CUDA init", 1.5),
        ("weight load", 2.0),
        ("engine start", 20.0),
    )
    assert start.total_s == start.expected_s == 57.5
    assert start.cost_usd(0.001) == pytest.approx(0.058)  # 58 billed seconds
    assert start.assumptions == ()


def test_cold_start_takes_each_missing_part_from_the_assumptions():
    start = serverless.cold_start(0.0, cuda_init_s=0.0)
    assert [name for name, _ in start.assumptions] == [
        "cold_start.image_cached",
        "cold_start.container_start_s",
        "cold_start.weight_load_bytes_per_s",
        "cold_start.engine_start_s",
        "cold_start.model_cached",
        "cold_start.restore_s",
        "cold_start.restore_hit_rate",
    ]
    assert dict(start.parts)["weight load"] == 0.0
    with pytest.raises(ValueError, match="weight_load_bytes_per_s"):
        serverless.cold_start(1e9, weight_load_bytes_per_s=0)


# --- cold starts as they happen: engine start, download, snapshot restores (issue 25, item 5) ---


def test_a_cold_start_worked_by_hand_with_a_download_and_restores():
    # 16 GB of weights: pulled at 200 MB/s (80 s) when no cache holds them, read at 2 GB/s (8 s)
    start = serverless.cold_start(
        16e9,
        image_cached=False,
        image_pull_s=60.0,
        container_start_s=5.0,
        cuda_init_s=2.0,
        weight_load_bytes_per_s=2e9,
        engine_start_s=30.0,
        model_cached=False,
        download_bytes_per_s=2e8,
        restore_s=2.0,
        restore_hit_rate=0.5,
    )
    assert start.parts == (
        ("image pull", 60.0),
        ("container start", 5.0),
        ("model download", 80.0),
        ("CUDA init", 2.0),
        ("weight load", 8.0),
        ("engine start", 30.0),
    )
    assert start.total_s == 185.0
    assert start.expected_s == 0.5 * 2.0 + 0.5 * 185.0
    # the hits spread evenly, the first start plain (no snapshot exists yet)
    assert [start.start_s(k) for k in range(4)] == [185.0, 2.0, 185.0, 2.0]
    quarter = serverless.cold_start(16e9, restore_hit_rate=0.25)
    assert [quarter.restored(k) for k in range(8)] == [False, False, False, True] * 2
    every = serverless.cold_start(16e9, restore_hit_rate=1.0)
    assert all(every.restored(k) for k in range(5))


def test_runpod_bills_a_cold_start_from_the_container_start_the_image_already_on_the_host():
    """Runpod's serverless pricing and worker pages (read 2026-12): billing runs from a worker's
    start to its stop, and the image is on the host before the worker starts; the uncached case,
    a host that must pull the image first, stays a named option."""
    cached = serverless.cold_start(16e9)
    assert dict(cached.assumptions)["cold_start.image_cached"] is True
    assert "image pull" not in dict(cached.parts) and "cold_start.image_pull_s" not in dict(
        cached.assumptions
    )
    assert [label for label, _ in cached.parts][0] == "container start"
    uncached = serverless.cold_start(16e9, image_cached=False)
    assert uncached.parts[0] == ("image pull", assumptions.value("cold_start.image_pull_s"))
    assert uncached.total_s == cached.total_s + assumptions.value("cold_start.image_pull_s")
    assert uncached.cost_usd(0.001) > cached.cost_usd(0.001)
    with pytest.raises(TypeError, match="image_cached"):
        serverless.cold_start(1e9, image_cached="yes")
    source = assumptions.get("cold_start.image_cached").source
    assert "docs.runpod.io/pricing/serverless" in source and "2026-12" in source


def test_the_cached_model_and_the_download_are_assumptions():
    cached = serverless.cold_start(16e9)
    taken = dict(cached.assumptions)
    assert taken["cold_start.model_cached"] is True and "model download" not in dict(cached.parts)
    assert "cold_start.download_bytes_per_s" not in taken
    fetched = serverless.cold_start(16e9, model_cached=False)
    assert (
        dict(fetched.parts)["model download"]
        == 16e9 / dict(fetched.assumptions)["cold_start.download_bytes_per_s"]
    )
    with pytest.raises(TypeError, match="model_cached"):
        serverless.cold_start(1e9, model_cached="yes")
    with pytest.raises(ValueError, match="restore_hit_rate"):
        serverless.cold_start(1e9, restore_hit_rate=1.5)


def test_simulate_restores_a_share_of_the_starts():
    # three lone requests, each after the last worker stopped: three starts, the second restored
    start = serverless.cold_start(
        0.0,
        image_cached=False,
        image_pull_s=8.0,
        container_start_s=1.0,
        cuda_init_s=1.0,
        weight_load_bytes_per_s=1e9,
        engine_start_s=0.0,
        restore_s=1.0,
        restore_hit_rate=0.5,
    )
    result = run([0.0, 100.0, 200.0], cold_start_s=start)
    assert result.cold_starts == 3 and result.restored_starts == 1
    assert result.latencies_s == (12.0, 3.0, 12.0)  # start 10 or 1, service 2
    assert result.billed_s == 17 + 8 + 17  # start + service + idle 5, each rounded up
    plain = run([0.0, 100.0, 200.0], cold_start_s=start.total_s)
    assert plain.restored_starts == 0 and plain.latencies_s == (12.0, 12.0, 12.0)


def test_runpod_documents_3_max_workers_by_default():
    from lab_utils import assumptions

    assert assumptions.value("max_workers") == 3  # Runpod's endpoint settings; the course said 10
    assert "Runpod" in assumptions.get("max_workers").source


@pytest.mark.parametrize(
    "make",
    [
        lambda: serverless.bursty_arrivals(1, 1e-10, 10.0),
        lambda: serverless.poisson_arrivals(1e9, 3600.0),
        lambda: serverless.batch_arrivals(10**12),
    ],
)
def test_arrival_generators_refuse_more_than_they_can_hold(make):
    """A tiny burst interval or a huge rate once asked for 10^10 floats (23 GB) before failing."""
    with pytest.raises(ValueError, match="at most 10,000,000 are simulated"):
        make()


# Figures of six hours of Poisson traffic plus a burst of 120, as simulate gave them before its
# loop was rewritten for speed (round 32): a rewrite must keep every one of them.
MIXED_DAY_FIGURES = {
    "one at a time": (
        dict(service_s=2.5, cold_start_s=30.0, idle_timeout_s=5.0, max_workers=3),
        (30.039, 755, 0, 30039, 0, 3007.5, 22.041192638, 68.393166378, 28262.613448),
    ),
    "batching, one active": (
        dict(
            service_s=lambda n: 1.0 + 0.5 * n,
            cold_start_s=30.0,
            idle_timeout_s=60.0,
            max_workers=3,
            concurrency=4,
            active_workers=1,
            active_price_per_worker_s=0.0007,
            duration_s=6 * 3600.0,
        ),
        (15.342, 2, 0, 222, 21600, 1694.218927023, 1.5, 30.28, 4958.778169),
    ),
    "restores": (
        dict(
            service_s=2.5,
            cold_start_s=serverless.ColdStart((("plain", 40.0),), restore_s=2.0, restore_hit_rate=0.5),
            idle_timeout_s=5.0,
            max_workers=2,
        ),
        (21.901, 700, 350, 21901, 0, 3007.5, 4.5, 90.185893387, 24827.011591),
    ),
}


@pytest.mark.parametrize("case", MIXED_DAY_FIGURES)
def test_a_mixed_traffic_simulation_keeps_its_figures(case):
    settings_, expected = MIXED_DAY_FIGURES[case]
    arrivals = serverless.poisson_arrivals(0.05, 6 * 3600, seed=3) + serverless.batch_arrivals(
        120, start_s=7000.0, spacing_s=0.1
    )
    r = serverless.simulate(arrivals, price_per_worker_s=0.001, **settings_)
    got = (
        round(r.cost_usd, 9),
        r.cold_starts,
        r.restored_starts,
        r.billed_s,
        r.active_billed_s,
        round(r.busy_s, 9),
        round(r.p50_s, 9),
        round(r.p95_s, 9),
        round(sum(r.latencies_s), 6),
    )
    assert got == expected


def test_a_queued_request_does_not_take_a_slot_of_a_full_worker():
    """Four requests at once, one always-on worker serving two at a time, 10 s each: two start at
    once, the other two together when the first two end (the simulator once started the fourth at
    0 s, in a slot the first two still held)."""
    r = serverless.simulate(
        [0.0] * 4,
        service_s=10.0,
        cold_start_s=0.0,
        idle_timeout_s=100.0,
        max_workers=1,
        price_per_worker_s=0.0,
        active_workers=1,
        concurrency=2,
    )
    assert r.latencies_s == (10.0, 10.0, 20.0, 20.0)
