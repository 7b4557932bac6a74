"""One engine behind every answer: five questions asked of every face give the same figures.

Each question goes through the Python calculators, `lab-utils ... --json`, the advisor and the
widgets' functions (the figure a widget draws); each face must report the calculators' figure,
never one of its own."""

import json
import subprocess
import sys

import pytest

from lab_utils import advisor, assumptions, economics, hardware, memory, serving, widgets

TOKENS = 1e8


def lab_utils_json(*args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "lab_utils.cli", *args, "--json"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def figure_text(fig) -> str:
    import matplotlib.pyplot as plt

    text = " ".join([fig.axes[0].get_title(), *(t.get_text() for t in fig.texts)])
    plt.close(fig)
    return text


@pytest.mark.parametrize(
    "model, method, option",
    [
        ("Llama-3.1-8B", "lora", "H100 SXM"),  # 1. an 8B LoRA fine-tune on an H100
        ("Llama-3.1-70B", "full", "24 x H100 SXM (3 servers)"),  # 2. a 70B full fine-tune on H100s
    ],
)
def test_a_fine_tune_costs_the_same_everywhere(model, method, option):
    estimate = economics.fine_tune_estimate(model, TOKENS, method=method, gpu="H100 SXM")
    face = lab_utils_json(
        "cost",
        "fine-tune",
        "--model",
        model,
        "--tokens",
        str(TOKENS),
        "--method",
        method,
        "--gpu",
        "H100 SXM",
    )
    advice = advisor.fine_tune(model, TOKENS, method=method)
    chosen = advice.option(option)
    assert estimate.n_gpus == face["n_gpus"] == chosen.n_devices
    assert estimate.cost_usd == pytest.approx(face["cost_usd"]) == pytest.approx(chosen.cost_per_job_usd)
    assert estimate.hours == pytest.approx(face["hours"]) == pytest.approx(chosen.hours)
    text = figure_text(
        widgets.job_advisor(job="fine-tune", model=model, method=method, n_tokens=TOKENS, static=True)
    )
    if chosen.bound in ("interconnect", "network"):  # shown as such, never the verdict
        assert advice.best.name != option and advice.best.bound not in ("interconnect", "network")
        option, usd = advice.best.name, advice.best.cost_per_job_usd
    else:  # the H100s are the cheapest here: the widget's verdict names them
        assert advice.best.name == option
        usd = estimate.cost_usd
    assert f"{option}, ${usd:,.2f}" in text


def test_the_70b_full_fine_tune_plans_with_deepspeeds_zero3_figure():
    """Notebook 03's rule (18 bytes per parameter over the GPUs plus the largest module gathered)
    is the one every face plans with: 16 H100s do not hold it, 24 do."""
    usable = memory.usable_bytes("H100 SXM")
    activations = memory.job_estimate("Llama-3.1-70B", "full").part("activations")
    assert memory.zero3_bytes_per_gpu("Llama-3.1-70B", 16) + activations > usable
    assert memory.zero3_bytes_per_gpu("Llama-3.1-70B", 24) + activations <= usable
    assert economics.fine_tune_estimate("Llama-3.1-70B", TOKENS, method="full", gpu="H100 SXM").n_gpus == 24


@pytest.mark.parametrize("requests_per_day", [1_000, 100_000])  # 3. and 4.: serving 8B
def test_serving_gets_one_verdict_from_every_face(requests_per_day):
    advice = advisor.serve("Llama-3.1-8B", requests_per_day)
    picked = lab_utils_json(
        "pick", "serve", "--model", "llama-3.1-8b", "--requests-per-day", str(requests_per_day)
    )
    costed = lab_utils_json(
        "cost", "serve", "--model", "llama-3.1-8b", "--requests-per-day", str(requests_per_day)
    )
    for face in (picked, costed["at_load"]):
        assert face["verdict"] == advice.verdict.text()
        assert [(o["name"], o["cost_per_month_usd"]) for o in face["options"]] == [
            (o.name, pytest.approx(o.cost_per_month_usd) if o.cost_per_month_usd is not None else None)
            for o in advice.options
        ]
    text = figure_text(
        widgets.job_advisor(job="serve", model="Llama-3.1-8B", requests_per_day=requests_per_day, static=True)
    )
    assert advice.verdict.text() in " ".join(text.split())
    # the cost calculator (notebook 05) draws the advisor's figures: the H100 always on and its
    # serverless class with the fine-tune spread over the months, the same model per token
    curves = widgets.cost_curves("Llama-3.1-8B", "H100 SXM")
    fixed = curves["fine_tune_per_month_usd"]
    assert fixed > 0
    drawn = {
        label: {volume: (option, usd) for volume, option, usd in points}
        for label, points in curves["lines"].items()
    }
    for label, name, extra in (
        ("always on", "H100 SXM always on", fixed),
        ("serverless", "Runpod serverless H100", fixed),
        ("per token, same model", advice.cheapest("hosted").name, 0.0),
    ):
        option, usd = drawn[label][requests_per_day]
        assert option.name == name and option.works == advice.option(name).works
        assert usd == pytest.approx(advice.option(name).cost_per_month_usd + extra)
    fig = widgets.cost_calculator("Llama-3.1-8B", "H100 SXM", static=True)
    plotted = {
        line.get_label(): dict(zip(line.get_xdata(), line.get_ydata())) for line in fig.axes[0].get_lines()
    }
    assert plotted["Runpod serverless H100"][requests_per_day] == pytest.approx(
        advice.option("Runpod serverless H100").cost_per_month_usd + fixed
    )
    figure_text(fig)
    # the H100 pod's month is its hourly price billed every hour, from the same price rule
    h100 = advice.option("H100 SXM always on")
    price = assumptions.device_price(hardware.get("H100 SXM")).usd_per_hour
    assert h100.cost_per_month_usd == pytest.approx(h100.n_devices * price * economics.HOURS_PER_MONTH)


def test_a_named_engine_reaches_every_face_and_each_answer_names_its_engine():
    """The same 8B on an H100 through TensorRT-LLM: calculator, cost serve, pick serve, the advisor
    and the widget agree, and each says the engine; the default names vLLM, never the bare bound."""
    estimate = serving.estimate(
        "Llama-3.1-8B",
        device="H100 SXM",
        batch=assumptions.value("serve_batch"),
        prompt_len=assumptions.value("input_tokens"),
        output_len=assumptions.value("output_tokens"),
        engine="tensorrt-llm",
    )
    costed = lab_utils_json(
        "cost",
        "serve",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "H100 SXM",
        "--engine",
        "trt-llm",
        "--requests-per-day",
        "1000",
    )
    assert costed["engine"] == "tensorrt-llm" and costed["ttft_s"] == pytest.approx(estimate.ttft_s)
    assert costed["tokens_per_s"] == pytest.approx(estimate.tokens_per_s)
    advice = advisor.serve("Llama-3.1-8B", 1000, engine="TensorRT-LLM")
    picked = lab_utils_json(
        "pick", "serve", "--model", "llama-3.1-8b", "--requests-per-day", "1000", "--engine", "tensorrt-llm"
    )
    for face in (picked, costed["at_load"]):
        assert face["verdict"] == advice.verdict.text()
        assert [(o["name"], o["engine"], o["cost_per_month_usd"]) for o in face["options"]] == [
            (
                o.name,
                o.engine,
                pytest.approx(o.cost_per_month_usd) if o.cost_per_month_usd is not None else None,
            )
            for o in advice.options
        ]
    # a GPU with the rest of the model in its host's RAM runs llama.cpp's split, whatever the engine
    whole = [o for o in advice.options if o.kind in ("gpu", "cpu", "serverless") and " host, " not in o.name]
    assert {o.engine for o in whole if o.fits} == {"tensorrt-llm"}
    text = figure_text(
        widgets.job_advisor(job="serve", requests_per_day=1000, engine="tensorrt-llm", static=True)
    )
    assert advice.verdict.text() in " ".join(text.split())
    default = lab_utils_json("cost", "serve", "--model", "llama-3.1-8b", "--gpu", "H100 SXM")
    assert default["engine"] == "vllm" and default["assumptions"]["engine"] == "vllm"
    h100 = advisor.serve("Llama-3.1-8B", 1000).option("H100 SXM always on")
    assert h100.engine == "vllm"


def test_qlora_memory_is_the_same_everywhere():  # 5. an 8B QLoRA fine-tune's memory
    total = memory.job_estimate("Llama-3.1-8B", method="qlora").total_bytes
    face = lab_utils_json("memory", "--model", "llama-3.1-8b", "--method", "qlora")
    advice = advisor.fine_tune("Llama-3.1-8B", TOKENS, method="qlora")
    assert face["total_bytes"] == pytest.approx(total)
    assert dict(advice.derived)["memory_bytes"] == pytest.approx(total)
    assert advice.option("H100 SXM").memory_bytes == pytest.approx(total)
    text = figure_text(widgets.memory_calculator(model="Llama-3.1-8B", method="qlora", static=True))
    assert f"{total / 1e9:.1f} GB" in text


def test_a_7b_model_served_in_int4_on_a_t4_is_the_same_everywhere():  # 6. 7B in int4 on a T4
    shape = dict(
        device="T4",
        prompt_len=assumptions.value("input_tokens"),
        output_len=assumptions.value("output_tokens"),
    )  # the T4's default engine, vLLM, on every face
    estimate = serving.estimate(
        "Mistral-7B-v0.1", batch=assumptions.value("serve_batch"), precision="int4", **shape
    )
    face = lab_utils_json(
        "cost",
        "serve",
        "--model",
        "mistral-7b-v0.1",
        "--gpu",
        "T4",
        "--precision",
        "int4",
        "--requests-per-day",
        "1000",
    )
    assert (face["precision"], face["compute_dtype"]) == ("int4", "fp16")
    assert face["tokens_per_s"] == pytest.approx(estimate.tokens_per_s)
    assert face["usd_per_million_tokens"] == pytest.approx(estimate.usd_per_million_tokens)
    advice = advisor.serve("Mistral-7B-v0.1", 1000, precision="int4")
    t4 = advice.option("T4 always on")
    assert (t4.n_devices, t4.precision, t4.works) == (1, "int4", True)  # in bf16 it needs two T4s
    assert {o["name"]: o["cost_per_month_usd"] for o in face["at_load"]["options"]}[
        "T4 always on"
    ] == pytest.approx(t4.cost_per_month_usd)
    assert advisor.serve("Mistral-7B-v0.1", 1000, precision="bf16").option("2 x T4 always on").n_devices == 2
    # the advisor left to choose ranks the T4 at the precisions that fit it, and says which it kept
    assert advisor.serve("Mistral-7B-v0.1", 1000).option("T4 always on").precision in ("fp8", "int8", "int4")


@pytest.mark.parametrize("always_on", [False, True])
def test_a_fully_busy_breakeven_is_the_same_from_python_and_the_cli(always_on):
    """`lab-utils cost breakeven --json` reports economics.breakeven_tokens_per_month's figure
    (a GPU fully busy whenever billed: the floor the engine's real-traffic answers sit above)."""
    prices_given = dict(api_cost_per_million=3.0, usd_per_hour=2.5, tokens_per_s=1500.0, fine_tune_cost=500.0)
    tokens = economics.breakeven_tokens_per_month(always_on=always_on, **prices_given)
    face = lab_utils_json(
        "cost",
        "breakeven",
        "--api-per-million",
        "3",
        "--price-per-hour",
        "2.5",
        "--tokens-per-s",
        "1500",
        "--fine-tune-cost",
        "500",
        *(["--always-on"] if always_on else []),
    )
    assert face["breakeven_tokens_per_month"] == pytest.approx(tokens) and face["never"] is False
    assert face["way"] == ("always on" if always_on else "pay per use")
    assert face["assumptions"] == {"amortize_months": assumptions.value("amortize_months")}
