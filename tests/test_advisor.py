"""lab_utils.advisor: rankings checked by hand against the catalog and the dated prices."""

import pytest

from lab_utils import advisor, assumptions, economics, hardware, llms, memory, offload, plots, prices

H100_POD = prices.hourly_price("Runpod H100 SXM pod")
SONNET = prices.api_price("Claude Sonnet 4.5")
IN, OUT = 500, 200  # tokens per request in the serving tests


def _requests_per_day(tokens_per_month):
    return tokens_per_month / (economics.HOURS_PER_MONTH / 24) / (IN + OUT)


def _cheap_serverless(**kwargs):
    return dict(max_simulated_requests=200, **kwargs)


# --- fine-tune -------------------------------------------------------------------------------


def test_a_model_that_fits_no_24_gb_card_is_never_offered_on_one():
    job = memory.job_estimate(
        "Llama-3.1-70B", method="lora", precision="bf16", seq_len=4096, recompute="full"
    )
    small = [s for s in hardware.catalog("gpu") if s.memory_bytes == 24e9]
    assert small and not any(memory.fits(job.total_bytes, s) for s in small)  # the premise, from memory.fits
    advice = advisor.fine_tune("Llama-3.1-70B", 1e7, method="lora")
    for option in advice.options:
        device = option.device
        for spec in small:
            if option.name in (spec.name, f"{spec.name} always on"):
                pytest.fail(f"{option.name} offered alone for a job of {job.total_bytes:.3g} bytes")
            if device == spec.name and option.works:
                assert option.n_devices >= memory.gpus_needed(job.total_bytes, spec) > 1


def test_serving_a_70b_model_puts_it_on_several_24_gb_gpus_or_none():
    advice = advisor.serve("Llama-3.1-70B", 1000, **_cheap_serverless())
    small = [o for o in advice.options if "24 GB" in o.name or "RTX 4090" in o.name or "RTX 3090" in o.name]
    hybrid = [o for o in small if " host, " in o.name]  # one card, the rest of the layers in its host's RAM
    small = [o for o in small if o not in hybrid]
    assert len(small) == 4  # 3090, 4090 always on; the 24 GB and RTX 4090 serverless classes
    for option in small:
        assert option.n_devices > 1 or not option.fits
    assert len(hybrid) == 2 and all("layers on the GPU" in o.name for o in hybrid)


def test_a_hybrid_option_is_priced_by_a_machine_whose_host_ram_holds_its_share():
    advice = advisor.serve(
        "gpt-oss-120b", 1000, input_tokens=IN, output_tokens=OUT, devices=["L40S", "L4"], include_cpus=False
    )
    hybrid = {o.device: o for o in advice.options if " host, " in o.name}
    host_share = {  # what each placement puts in the host's RAM (offload.fitting_placements)
        name: next(
            p
            for p in offload.fitting_placements(
                "gpt-oss-120b",
                gpu=name,
                host=assumptions.value("offload_host"),
                prompt_len=IN,
                context_len=IN + OUT,
            )
            if p.placement != "all on the GPU"
        ).host_bytes
        for name in ("L40S", "L4")
    }
    g6e, g6 = prices.hourly_price("AWS g6e.xlarge"), prices.hourly_price("AWS g6.xlarge")
    assert g6e.host_ram_bytes >= host_share["L40S"]  # 32 GiB holds the L40S's share: that machine
    assert hybrid["L40S"].usd_per_hour == g6e.usd_per_hour and "AWS g6e.xlarge" in hybrid["L40S"].price_source
    assert g6.host_ram_bytes < host_share["L4"]  # 16 GiB is too small: never chosen, the old price, said
    assert "AWS g6.xlarge" not in hybrid["L4"].price_source and "host assumed" in hybrid["L4"].price_source
    assert hybrid["L4"].usd_per_hour == assumptions.device_price(hardware.get("L4")).usd_per_hour
    assert prices.host_offer("L4", host_share["L4"]) is None
    assert assumptions.device_price(hardware.get("L40S")).offer != g6e.name  # it prices the GPU alone


def test_fine_tune_hours_and_cost_are_the_economics_formulas():
    advice = advisor.fine_tune("Llama-3.1-8B", 1e8, method="lora", mfu=0.5)
    h100 = advice.option("H100 SXM")
    config = llms.get("Llama-3.1-8B")
    # 4·N·D plus the causal attention at the assumed 4,096 tokens: 3 passes of 4 x 32 x 4,096 x 2,048
    flops = (4 * config.n_params + 3 * 4 * 32 * 4096 * 2048) * 1e8
    hours = flops / (hardware.get("H100 SXM").peak_flops["bf16"] * 0.5) / 3600
    assert h100.hours == pytest.approx(hours)
    assert h100.cost_per_job_usd == pytest.approx(hours * H100_POD.usd_per_hour)
    assert (h100.price_date, h100.bound, h100.n_devices) == (H100_POD.date, "compute", 1)


def test_a_full_fine_tune_too_big_for_one_24_gb_card_is_offered_with_its_state_in_ram():
    advice = advisor.fine_tune("Llama-3.1-8B", 1e8, method="full", include_cpus=False)
    hybrid = {o.device: o for o in advice.options if "(ZeRO-Offload)" in o.name}
    rtx, h100 = hybrid["RTX 4090"], hybrid["H100 SXM"]
    assert rtx.works and rtx.n_devices == 1
    # the optimizer alone in RAM leaves bf16 weights, gradients and activations: over 24 GB, under 80 GB
    alone = memory.job_estimate("Llama-3.1-8B", method="full", offload="optimizer")
    assert 24e9 < alone.gpu_bytes < 80e9
    assert "optimizer+params in RAM" in rtx.name and "optimizer in RAM" in h100.name
    offloaded = economics.fine_tune_estimate(
        "Llama-3.1-8B", 1e8, method="full", gpu="RTX 4090", offload="optimizer+params"
    )
    # priced by fine_tune_estimate, not a formula of its own
    assert rtx.hours == pytest.approx(offloaded.hours)
    assert rtx.cost_per_job_usd == pytest.approx(offloaded.cost_usd)
    assert rtx.memory_bytes == offloaded.memory_bytes <= 24e9
    whole = memory.job_estimate("Llama-3.1-8B", method="full")
    for option in hybrid.values():  # only beside GPUs the job does not fit whole
        assert whole.total_bytes > hardware.get(option.device).memory_bytes
    assert "H200 SXM" not in hybrid and "B200" not in hybrid


def test_full_fine_tune_of_a_parameter_count_needs_16_bytes_per_parameter():
    n = 7e9  # 112 GB of weights, gradients and Adam state: two 80 GB GPUs
    advice = advisor.fine_tune(n, 1e6, method="full", include_cpus=False)
    assert advice.option("2 x H100 SXM").memory_bytes == pytest.approx(16 * n)
    assert advice.option("2 x H100 SXM").n_devices == 2


def test_options_are_ranked_working_first_then_by_cost():
    advice = advisor.fine_tune("Llama-3.1-8B", 1e7)
    working = [o for o in advice.options if o.works]
    assert advice.options[: len(working)] == tuple(working)
    costs = [o.cost_per_job_usd for o in working]
    assert costs == sorted(costs)
    assert advice.best == working[0]


def test_a_gpu_without_any_price_in_the_data_is_listed_without_one():
    priced = {p.gpu for p in prices.hourly_prices()} | {g for p in prices.serverless_prices() for g in p.gpus}
    unpriced = [s.name for s in hardware.catalog("gpu") if s.name not in priced]
    assert unpriced  # e.g. the A10 and the H100 PCIe
    advice = advisor.fine_tune("Llama-3.1-8B", 1e7, include_cpus=False)
    for name in unpriced:
        option = next(o for o in advice.options if o.device == name)
        assert option.cost_per_job_usd is None and not option.works and "no price" in option.why


def test_gpus_without_an_hourly_offer_are_priced_at_the_serverless_active_rate():
    advice = advisor.fine_tune("Llama-3.1-8B", 1e7, include_cpus=False)
    l40s = advice.option("L40S")
    assert l40s.usd_per_hour == pytest.approx(prices.serverless_price("L40S").active_per_s * 3600)
    assert "active rate x 3600" in l40s.price_source


# --- serving: API against an always-on H100 ---------------------------------------------------


def test_a_million_tokens_a_month_is_cheaper_on_an_api_than_on_an_always_on_h100():
    advice = advisor.serve(
        "Llama-3.1-8B", _requests_per_day(1e6), input_tokens=IN, output_tokens=OUT, **_cheap_serverless()
    )
    h100 = advice.option("H100 SXM always on")
    assert h100.cost_per_month_usd == pytest.approx(H100_POD.usd_per_hour * economics.HOURS_PER_MONTH)
    for api in prices.api_prices():
        prefix = "per token" if api.model else "API"
        if api.model in (None, "Llama-3.1-8B"):
            assert advice.option(f"{prefix}: {api.name}").cost_per_month_usd < h100.cost_per_month_usd
    # the same open model bought per token is the answer; a closed model never is (another product)
    assert advice.best.kind == "hosted" and "bought per token" in advice.verdict.text()
    assert all(not o.works and "different product" in o.why for o in advice.options if o.kind == "api")
    assert "different product" in advice.verdict.text()


def test_above_the_break_even_volume_the_h100_beats_the_api():
    blended = (IN * SONNET.input_per_million + OUT * SONNET.output_per_million) / (IN + OUT)  # $ per 1M
    pod_month = H100_POD.usd_per_hour * economics.HOURS_PER_MONTH
    break_even = pod_month / blended * 1e6  # tokens a month at which Sonnet costs one pod-month
    below = advisor.serve(
        "Llama-3.1-8B",
        _requests_per_day(break_even / 2),
        input_tokens=IN,
        output_tokens=OUT,
        **_cheap_serverless(),
    )
    above = advisor.serve(
        "Llama-3.1-8B",
        _requests_per_day(break_even * 2),
        input_tokens=IN,
        output_tokens=OUT,
        **_cheap_serverless(),
    )
    assert (
        below.option("API: Claude Sonnet 4.5").cost_per_month_usd
        < below.option("H100 SXM always on").cost_per_month_usd
    )
    assert above.option("H100 SXM always on").n_devices == 1  # one pod carries this volume
    assert (
        above.option("H100 SXM always on").cost_per_month_usd
        < above.option("API: Claude Sonnet 4.5").cost_per_month_usd
    )
    assert above.option("API: Claude Sonnet 4.5").cost_per_month_usd == pytest.approx(2 * pod_month)


def test_serverless_option_uses_the_simulation_and_reports_cold_starts():
    advice = advisor.serve(
        "Llama-3.1-8B", 50, cold_start_s=120.0, latency_target_s=30.0, **_cheap_serverless()
    )
    option = advice.option("Runpod serverless H100")
    assert option.bound == "cold starts" and not option.works and option.latency_s > 120
    warm = advisor.serve("Llama-3.1-8B", 50, cold_start_s=0.0, latency_target_s=30.0, **_cheap_serverless())
    assert warm.option("Runpod serverless H100").works


def test_serverless_workers_batch_as_the_pod_does(monkeypatch):
    """Each worker runs the serving engine up to the batch that keeps a request within the
    target (serving.capacity), a request taking serving.estimate's latency at the batch it joins."""
    from lab_utils import serverless, serving

    calls = []
    real_simulate = serverless.simulate

    def spy(arrivals, **kwargs):
        calls.append(kwargs)
        return real_simulate(arrivals, **kwargs)

    monkeypatch.setattr(serverless, "simulate", spy)
    advisor.serve(
        "Llama-3.1-8B",
        20_000,
        input_tokens=IN,
        output_tokens=OUT,
        latency_target_s=10.0,
        efficiency=0.7,
        precision="bf16",
        **_cheap_serverless(),
    )
    h100 = hardware.get("H100 SXM")
    shape = dict(prompt_len=IN, output_len=OUT, weight_bytes_per_param=2, efficiency=0.7, usd_per_hour=0.0)
    capacity = serving.capacity("Llama-3.1-8B", device=h100, latency_target_s=10.0, **shape)
    price = prices.serverless_price("H100")
    (h100_call,) = [c for c in calls if c["price_per_worker_s"] == pytest.approx(price.flex_per_s)]
    assert capacity.batch > 1 and h100_call["concurrency"] == capacity.batch
    for batch in (1, 7, capacity.batch):
        expected_s = serving.estimate("Llama-3.1-8B", device=h100, batch=batch, **shape).latency_s
        assert h100_call["service_s"](batch) == pytest.approx(expected_s)


def test_a_serverless_simulation_is_reused_only_where_every_service_time_asked_is_the_same():
    """Two precisions whose workers answer alike (a bf16 checkpoint in "checkpoint" and "bf16")
    share one simulation; a worker with one batch's time different simulates its own."""
    from lab_utils import serverless
    from lab_utils.advisor_serve_serverless import _BatchLatencies, _simulate_once

    class Server:  # serving.Estimates' latency_s, from a table
        def __init__(self, seconds):
            self.latency_s = seconds.__getitem__

    arrivals = serverless.poisson_arrivals(0.5, 600.0, seed=3)
    given = dict(concurrency=4, cold_start_s=30.0, idle_timeout_s=5.0, max_workers=3, price_per_worker_s=1e-3)
    times = {1: 4.0, 2: 5.0, 3: 6.5, 4: 8.0}
    simulated = []
    first = _simulate_once(simulated, arrivals, _BatchLatencies(Server(times)), **given)
    assert _simulate_once(simulated, arrivals, _BatchLatencies(Server(dict(times))), **given) is first
    assert first == serverless.simulate(arrivals, service_s=times.__getitem__, **given)
    slower = {**times, 2: 5.5}
    other = _simulate_once(simulated, arrivals, _BatchLatencies(Server(slower)), **given)
    assert other is not first and other == serverless.simulate(
        arrivals, service_s=slower.__getitem__, **given
    )
    dearer = _simulate_once(
        simulated, arrivals, _BatchLatencies(Server(times)), **{**given, "max_workers": 2}
    )
    assert dearer is not first and len(simulated) == 3


def test_at_high_traffic_a_batching_serverless_worker_meets_the_target_one_at_a_time_does_not():
    # an hour of traffic: the first workers' start (engine start included, about 105 s) queues
    # some 120 requests, which must stay under 5% of the window for its p95 to reach steady state
    # in bf16: in int4 a one-at-a-time 4090 decodes fast enough for this traffic
    busy = dict(
        input_tokens=IN,
        output_tokens=OUT,
        latency_target_s=10.0,
        max_simulated_requests=4000,
        precision="bf16",
    )
    batched = advisor.serve("Llama-3.1-8B", 100_000, **busy).option("Runpod serverless RTX 4090")
    one_at_a_time = advisor.serve("Llama-3.1-8B", 100_000, batch=1, **busy).option(
        "Runpod serverless RTX 4090"
    )
    assert batched.works and not one_at_a_time.works
    assert batched.cost_per_month_usd < one_at_a_time.cost_per_month_usd


# --- sparse training -------------------------------------------------------------------------


def test_an_embedding_table_too_big_for_one_gpu_server_leaves_the_cpu():
    values = 200e9  # x 8 bytes = 1.6 TB: more than 8 x 141 GB, less than a CPU server's memory
    advice = advisor.train(2e6, 1e8, embedding_params=values, lookups_per_example=30)
    assert advice.best.kind == "cpu" and "a CPU" in advice.verdict.headline
    assert all(not o.works for o in advice.options if o.kind == "gpu")
    assert all(o.bound == "memory" for o in advice.options if o.kind == "gpu")


def test_gather_bound_training_is_limited_by_bandwidth():
    advice = advisor.train(1e5, 1e9, embedding_params=1e9, lookups_per_example=100, include_cpus=False)
    assert advice.option("H100 SXM").bound == "bandwidth"
    spec = hardware.get("H100 SXM")
    seconds = 1e9 * 100 * 3 * 128 * 4 / (spec.bandwidth_bytes_per_s * 0.5)
    assert advice.option("H100 SXM").hours == pytest.approx(seconds / 3600)


# --- bad job descriptions --------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, error, name",
    [
        (lambda: advisor.fine_tune("Llama-3.1-8B", 1e7, method="dpo"), ValueError, "method"),
        (lambda: advisor.fine_tune("Llama-3.1-8B", -5), ValueError, "n_tokens"),
        (lambda: advisor.fine_tune("Llama-3.1-8B", "many"), TypeError, "n_tokens"),
        (lambda: advisor.fine_tune(-1, 1e7), ValueError, "model"),
        (lambda: advisor.fine_tune("Llama-3.1-8B", 1e7, mfu=1.5), ValueError, "mfu"),
        (lambda: advisor.fine_tune("Llama-3.1-8B", 1e7, max_devices=0), ValueError, "max_devices"),
        (lambda: advisor.serve("Llama-3.1-8B", 0), ValueError, "requests_per_day"),
        (lambda: advisor.serve(8e9, 100), TypeError, "model"),
        (lambda: advisor.serve("Llama-3.1-8B", 100, latency_target_s=-1), ValueError, "latency_target_s"),
        (lambda: advisor.serve("Llama-3.1-8B", 100, output_tokens=0), ValueError, "output_tokens"),
        (lambda: advisor.serve("Llama-3.1-8B", 100, utilisation=0), ValueError, "utilisation"),
        (lambda: advisor.serve("Llama-3.1-8B", 100, precision="fp9"), ValueError, "precision"),
        (lambda: advisor.train(1e6, 1e6, embedding_params=1e9), ValueError, "lookups_per_example"),
        (lambda: advisor.train(1e6, 1e6, lookups_per_example=3), ValueError, "embedding_params"),
        (lambda: advisor.train(1e6, 1e6, cpu_offer="AWS g4dn.xlarge"), ValueError, "cpu_offer"),
    ],
)
def test_bad_job_descriptions_name_the_parameter(call, error, name):
    with pytest.raises(error, match=name):
        call()


def test_unknown_model_is_refused_with_the_catalog():
    with pytest.raises(ValueError, match="Llama"):
        advisor.serve("Llama-9", 100)


def test_table_and_json_view():
    advice = advisor.fine_tune("Llama-3.1-8B", 1e7)
    text = advice.table()
    first = text.splitlines()[2].split()  # header, rule, then rank 1
    assert first[:3] == ["1", *advice.best.name.split()]
    data = advice.to_dict()
    assert data["options"][0]["name"] == advice.best.name and data["options"][0]["works"]
    assert data["assumptions"]["mfu_single_gpu"] == assumptions.value("mfu_single_gpu")  # the regimes' MFU


def test_chart_marks_every_working_option():
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    advice = advisor.fine_tune("Llama-3.1-8B", 1e7)
    fig, ax = plots.advice_chart(advice)
    points = sum(len(c.get_offsets()) for c in ax.collections)
    assert points == sum(o.works for o in advice.options)
    assert ax.get_xscale() == "log" and "(h)" in ax.get_xlabel()
    plt.close(fig)


# --- lab-utils pick --------------------------------------------------------------------------


def _pick(*args):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run(
        [sys.executable, "-m", "lab_utils.cli", "pick", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=root,
        env=env,
        timeout=120,
    )


def test_pick_prints_the_ranking_and_json():
    import json

    table = _pick("fine-tune", "--model", "llama-3.1-8b", "--tokens", "1e8", "--limit", "3")
    assert table.returncode == 0, table.stderr
    best = advisor.fine_tune("Llama-3.1-8B", 1e8).best
    assert table.stdout.splitlines()[2].split()[1:3] == best.name.split()[:2]
    assert "assumptions" in table.stdout and "mfu = 0.4" in table.stdout
    served = _pick("serve", "--model", "llama-3.1-8b", "--requests-per-day", "47", "--json")
    assert served.returncode == 0, served.stderr
    data = json.loads(served.stdout)
    assert data["period"] == "month" and data["options"][0]["kind"] == "hosted"


def test_pick_refuses_a_bad_job_in_one_line():
    missing = _pick("serve", "--requests-per-day", "10")
    assert missing.returncode == 2 and "--model" in missing.stderr and "Traceback" not in missing.stderr
    bad = _pick("fine-tune", "--model", "llama-3.1-8b", "--tokens", "1e8", "--method", "dpo")
    assert bad.returncode == 2 and "method" in bad.stderr
    wrong = _pick("train", "--params", "1e6", "--examples", "1e6", "--embedding-params", "1e9")
    assert wrong.returncode == 2 and "--lookups" in wrong.stderr


def test_job_advisor_widget_draws_the_static_chart_and_checks_its_job():
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from lab_utils import widgets

    fig = widgets.job_advisor(job="serve", requests_per_day=1000, static=True)
    assert "the answer is" in " ".join(text.get_text() for text in fig.texts)
    plt.close(fig)
    with pytest.raises(ValueError, match="job"):
        widgets.job_advisor(job="train", static=True)


def test_serverless_starts_are_the_cold_start_models_plain_and_restored(monkeypatch):
    """The advisor gives ``serverless.simulate`` the ``serverless.cold_start`` of the weights
    itself, so its snapshot restores (FlashBoot, at the assumed hit rate) take their share of
    the starts, as notebook 04's simulation does; the output says how many were restored."""
    from lab_utils import serverless

    calls = []
    real_simulate = serverless.simulate

    def spy(arrivals, **kwargs):
        result = real_simulate(arrivals, **kwargs)
        calls.append((kwargs, result))
        return result

    monkeypatch.setattr(serverless, "simulate", spy)
    advice = advisor.serve(
        "Llama-3.1-8B", 1000, precision="bf16", devices=["H100 SXM"], **_cheap_serverless()
    )
    ((kwargs, result),) = calls
    start = serverless.cold_start(llms.get("Llama-3.1-8B").n_params * memory.BYTES_PER_VALUE["bf16"])
    assert kwargs["cold_start_s"] == start
    assert start.restore_hit_rate == assumptions.value("cold_start.restore_hit_rate")
    assert 0 < result.restored_starts < result.cold_starts
    option = advice.option("Runpod serverless H100")
    said = f"{result.cold_starts} cold starts simulated, {result.restored_starts} of them snapshot restores"
    assert said in option.why
    starts = dict(advice.derived)["serverless_starts"]
    assert (
        f"plain start {start.total_s:.0f} s in bf16" in starts
        and f"{start.restore_s:g} s for 50% of" in starts
    )
    assert "(serverless starts, as serverless.cold_start: plain start" in advice.table()
    # a start given in seconds is every start: no restores
    calls.clear()
    advisor.serve(
        "Llama-3.1-8B", 1000, precision="bf16", devices=["H100 SXM"], cold_start_s=30.0, **_cheap_serverless()
    )
    assert calls[0][0]["cold_start_s"] == 30.0 and calls[0][1].restored_starts == 0


def test_device_hours_count_every_gpu_and_price_and_energy_follow_them():
    """A serverless worker of several GPUs bills each of them: device_hours are GPU-hours,
    usd_per_hour the price of one, kWh each GPU at its TDP, on every priced row."""
    from lab_utils import energy

    advice = advisor.serve("Llama-3.1-70B", 1000, precision="bf16", **_cheap_serverless())
    multi = [
        o
        for o in advice.options
        if o.kind == "serverless" and o.n_devices > 1 and o.cost_per_month_usd is not None
    ]
    assert multi, "the premise: a 70B model in bf16 needs workers of several GPUs"
    for option in advice.options:
        if option.device_hours_per_month is None or option.cost_per_month_usd is None:
            continue
        assert option.cost_per_month_usd == pytest.approx(
            option.device_hours_per_month * option.usd_per_hour
        ), option.name
    for option in multi:
        klass = prices.serverless_price(option.name.split(",")[0])
        assert option.usd_per_hour == pytest.approx(klass.flex_per_hour)  # per GPU, not per worker
        spec = min((hardware.get(g) for g in klass.gpus), key=lambda s: s.bandwidth_bytes_per_s)
        assert option.energy_per_month_kwh == pytest.approx(
            energy.job_energy_kwh(option.device_hours_per_month, 1, spec.tdp_watts)
        )


def test_devices_narrows_the_options_and_keeps_their_figures():
    full = advisor.serve("Llama-3.1-8B", 1000, **_cheap_serverless())
    narrow = advisor.serve("Llama-3.1-8B", 1000, devices=["H100 SXM"], **_cheap_serverless())
    assert {o.name for o in narrow.options if o.kind in ("gpu", "serverless")} == {
        "H100 SXM always on",
        "Runpod serverless H100",
    }
    for option in narrow.options:
        assert full.option(option.name).cost_per_month_usd == pytest.approx(option.cost_per_month_usd)
    with pytest.raises(TypeError, match="devices"):
        advisor.serve("Llama-3.1-8B", 1000, devices="H100 SXM")


def test_advice_keeps_assumptions_taken_apart_from_values_given_and_results_derived():
    advice = advisor.serve("Llama-3.1-8B", 1000, latency_target_s=10, cpu_offer="AWS c5.24xlarge")
    taken, given, derived = dict(advice.assumptions), dict(advice.given), dict(advice.derived)
    assert given["latency_target_s"] == 10 and given["cpu_offer"] == "AWS c5.24xlarge"
    assert "latency_target_s" not in taken and "cpu_offer" not in taken and "input_tokens" in taken
    assert all(assumptions.get(name) for name in taken)  # every one an assumption of the TOML
    assert "tokens_per_month" in derived and "tokens_per_month" not in taken
    job = advisor.fine_tune("Llama-3.1-8B", 1e8, method="lora")
    assert set(dict(job.derived)) == {"memory_bytes", "flops"} and dict(job.given)["method"] == "lora"
    assert "default_method" not in dict(job.assumptions)


def test_options_name_their_device_and_period():
    job = advisor.fine_tune("Llama-3.1-70B", 1e7, method="full", include_cpus=False)
    for option in job.options:
        assert option.period == "job" and option.cost_per_month_usd is None
        assert option.device in option.name  # "24 x H100 SXM (3 servers)" runs on device "H100 SXM"
    month = advisor.serve("Llama-3.1-8B", 1000)
    assert all(o.period == "month" and o.cost_per_job_usd is None for o in month.options)
    assert {o.device for o in month.options if o.kind in ("api", "hosted")} == {None}


def test_best_precision_simulates_only_the_latencies_that_decide():
    """Each precision priced before its latency: the cheapest is finished first, the next only when
    it fails, the first precision when none works; a tie goes to the better precision (listed first)."""
    from lab_utils.advisor_options import Option, period_fields
    from lab_utils.advisor_serve_job import _best_precision, _Priced

    finished = []

    def priced(name, cost_usd, works=True):
        def finish():
            finished.append(name)
            return Option(
                name=name,
                kind="gpu",
                device="x",
                n_devices=1,
                fits=True,
                usd_per_hour=1.0,
                price_source="-",
                price_date="-",
                bound="bandwidth",
                why=None if works else "too slow",
                **period_fields("month", cost_usd=cost_usd),
            )

        return _Priced(cost_usd, finish)

    best = _best_precision([priced("bf16", 3.0), priced("fp8", 1.0, works=False), priced("int4", 2.0)])
    assert best.name == "int4" and finished == ["fp8", "int4"]  # bf16, dearer, never simulated
    finished.clear()
    best = _best_precision([priced("bf16", 2.0), priced("int4", 2.0)])
    assert best.name == "bf16" and finished == ["bf16"]
    finished.clear()
    best = _best_precision(
        [priced("bf16", 2.0, works=False), priced("int4", None), priced("int8", 1.0, False)]
    )
    assert best.name == "bf16" and best.why == "too slow" and finished == ["int8", "bf16"]


def test_a_batch_a_device_cannot_hold_gives_it_a_row_that_says_so():
    """A serving batch given to the advisor that leaves no room on a device beside the weights is
    that device's not-possible row (the max_batch error as its why), not an error for the whole job."""
    advice = advisor.serve("qwen3-30b-a3b", 1_000, batch=32, max_simulated_requests=50)
    m1_max = next(o for o in advice.options if o.device == "Apple M1 Max")
    assert not m1_max.works and m1_max.bound == "memory"
    assert "room for the KV caches of 11 sequences" in m1_max.why
