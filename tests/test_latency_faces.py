"""The faces of lab_utils.replica agree: notebook 11's checked output is what `lab-utils latency`
prints for the same job, and the widget draws the simulator's answer."""

import json
import shlex
from pathlib import Path

import pytest

from lab_utils import cli, course, widgets

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "11_latency_under_load.ipynb"


def _checked_cli_output() -> str:
    for cell in course.read_cells(NOTEBOOK):
        if cell["cell_type"] == "code" and "lab-utils latency" in "".join(cell["source"]):
            texts = (output.get("text", "") for output in cell["outputs"])
            return "".join("".join(text) if isinstance(text, list) else text for text in texts)
    raise AssertionError("notebook 11 has no cell printing a lab-utils latency command")


def test_notebook_11_prints_what_lab_utils_latency_answers(capsys):
    command, _, printed = _checked_cli_output().partition("\n")
    argv = shlex.split(command)
    assert argv[0] == "lab-utils" and "--json" in argv
    assert cli.main(argv[1:]) == 0
    answered = json.loads(capsys.readouterr().out)
    assert json.loads(printed) == pytest.approx(answered, rel=1e-5, abs=1e-6)  # printed to 6 decimals


def test_the_widget_draws_the_simulated_percentiles():
    import matplotlib.pyplot as plt

    fig = widgets.latency_calculator(prompt_len=500, output_len=100, static=True)
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert {"TTFT p99", "TPOT p50", "TPOT p99"} <= set(labels)
    plt.close(fig)
    with pytest.raises(TypeError, match="static"):
        widgets.latency_calculator(static="yes")


def test_pick_serve_times_an_always_on_option_by_the_simulators_p95_at_the_rate():
    """`lab-utils pick serve` (advisor.serve) times an always-on replica as `lab-utils latency`
    does the same job: replica.at_rate at the learner's rate per replica, its p95 end to end."""
    from lab_utils import advisor, assumptions, replica

    per_day = 200_000
    advice = advisor.serve(
        "Llama-3.1-8B", per_day, max_simulated_requests=200, input_tokens=800, output_tokens=150
    )
    h100 = next(o for o in advice.options if o.name.endswith("H100 SXM always on"))
    same = replica.at_rate(
        "Llama-3.1-8B",
        device="H100 SXM",
        rate_per_s=per_day / 86_400 / (h100.n_devices or 1),
        prompt_len=800,
        output_len=150,
        n_requests=assumptions.value("replica_requests"),
        precision=h100.precision,
        usd_per_hour=0.0,
    )
    assert h100.latency_s == pytest.approx(same.e2e.p95)


def test_pick_serve_times_a_serverless_worker_by_its_wait_and_the_simulators_time_inside(monkeypatch):
    """A serverless row's p95 is each request's wait for a worker (serverless.simulate: queue,
    cold start) plus a replica.at_rate request's end-to-end time at the rate one busy worker
    sees, request i taking the simulator's request i mod N."""
    from lab_utils import advisor, assumptions, prices, replica, serverless

    results = []
    real_simulate = serverless.simulate

    def spy(arrivals, **kwargs):
        results.append((kwargs["price_per_worker_s"], real_simulate(arrivals, **kwargs)))
        return results[-1][1]

    monkeypatch.setattr(serverless, "simulate", spy)
    job = dict(input_tokens=800, output_tokens=150, precision="bf16", latency_target_s=60.0)
    advice = advisor.serve(
        "Llama-3.1-8B", 400_000, max_simulated_requests=300, cold_start_s=0.0, devices=["H100 SXM"], **job
    )
    h100 = advice.option("Runpod serverless H100")
    (result,) = [
        r for price_s, r in results if price_s == pytest.approx(prices.serverless_price("H100").flex_per_s)
    ]
    assert serverless.shared_start_share(result) >= 0.05  # requests share workers: the simulator times them
    inside = replica.at_rate(
        "Llama-3.1-8B",
        device=h100.device,
        rate_per_s=len(result.latencies_s) / result.busy_s,
        prompt_len=800,
        output_len=150,
        n_requests=assumptions.value("replica_requests"),
        precision="bf16",
        usd_per_hour=0.0,
    )
    inside_s = [r.e2e_s for r in inside.requests]
    latencies = [wait + inside_s[i % len(inside_s)] for i, wait in enumerate(result.waits_s)]
    assert h100.latency_s == pytest.approx(serverless.percentile(latencies, 95))
    assert h100.latency_s != pytest.approx(result.p95_s)  # not the estimate's batch times any more


def test_at_light_load_a_serverless_request_takes_one_request_alone_after_its_wait(monkeypatch):
    """Under 5% of the requests find their worker busy (p95_at's light load): each request's time
    inside the worker is one request's alone (replica.at_rate of one request)."""
    from lab_utils import advisor, replica, serverless

    results = []
    real_simulate = serverless.simulate
    monkeypatch.setattr(
        serverless,
        "simulate",
        lambda arrivals, **kwargs: results.append(real_simulate(arrivals, **kwargs)) or results[-1],
    )
    job = dict(input_tokens=800, output_tokens=150, precision="bf16", cold_start_s=5.0, devices=["H100 SXM"])
    h100 = advisor.serve("Llama-3.1-8B", 50, **job).option("Runpod serverless H100")
    (result,) = results
    assert result.waits_s and serverless.shared_start_share(result) < 0.05
    alone = replica.at_rate(
        "Llama-3.1-8B",
        device="H100 SXM",
        rate_per_s=50 / 86_400,
        prompt_len=800,
        output_len=150,
        n_requests=1,
        precision="bf16",
        usd_per_hour=0.0,
    )
    expected = serverless.percentile([wait + alone.e2e.p95 for wait in result.waits_s], 95)
    assert h100.latency_s == pytest.approx(expected) and h100.latency_s > 5  # a cold start, then the request
