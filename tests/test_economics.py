"""economics: the worked examples, the serving and break-even arithmetic, and the price data
(invariants every price must keep, and a few prices checked by hand against their sources)."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lab_utils import assumptions, catalogs, economics, hardware, llms, memory
from lab_utils import prices as price_data

H100_BF16 = hardware.get("H100 SXM").peak_flops["bf16"]


# --- worked examples (issue 7, "Done when") ---------------------------------------------------


def test_gpt3_training_compute():
    assert economics.training_flops(175e9, 300e9) == pytest.approx(3.15e23)


def test_8b_lora_on_an_h100_at_40_percent_mfu():
    flops = economics.training_flops(8e9, 10e6, method="lora")
    assert flops == pytest.approx(3.2e17)
    hours = economics.training_hours(flops, peak_flops=H100_BF16, mfu=0.4)
    assert hours == pytest.approx(0.2247, abs=5e-4)
    assert round(hours, 2) == 0.22


def test_cost_per_million_tokens_at_191_tokens_per_s():
    assert economics.cost_per_million_tokens(1.12, 191) == pytest.approx(1.6289, abs=1e-4)


# --- compute and time -------------------------------------------------------------------------


def test_methods_scale_as_6_4_2():
    flops = {m: economics.training_flops(1e9, 1e6, method=m) for m in ("full", "lora", "qlora", "inference")}
    assert flops == {"full": 6e15, "lora": 4e15, "qlora": 4e15, "inference": 2e15}


def test_hours_divide_over_devices_and_mfu():
    one = economics.training_hours(3.6e18, peak_flops=1e15, mfu=1.0)
    assert one == pytest.approx(1.0)
    assert economics.training_hours(3.6e18, peak_flops=1e15, mfu=0.5, n_devices=4) == pytest.approx(0.5)


# --- serving ----------------------------------------------------------------------------------


def test_api_cost_and_blended_price():
    assert economics.api_cost(2e6, 1e6, price_in_per_million=1.0, price_out_per_million=5.0) == pytest.approx(
        7.0
    )
    assert economics.blended_price_per_million(1.0, 5.0, output_share=0.25) == pytest.approx(2.0)
    assert economics.blended_price_per_million(1.0, 5.0, output_share=1.0) == pytest.approx(5.0)


def test_decode_bound_of_a_7b_4bit_model_on_an_rtx_4090():
    """Bandwidth / bytes of weights: 1008 GB/s / 3.5 GB = 288 tokens/s, above the 191 measured."""
    spec = hardware.get("RTX 4090")
    bound = economics.decode_tokens_per_s_bound(
        7e9, bytes_per_param=0.5, bandwidth_bytes_per_s=spec.bandwidth_bytes_per_s
    )
    assert bound == pytest.approx(288.0)
    assert 191 < bound


def test_decode_bound_grows_with_batch_until_compute_caps_it():
    kwargs = {"bytes_per_param": 2, "bandwidth_bytes_per_s": 3.35e12}
    one = economics.decode_tokens_per_s_bound(8e9, **kwargs)
    assert economics.decode_tokens_per_s_bound(8e9, batch=8, **kwargs) == pytest.approx(8 * one)
    capped = economics.decode_tokens_per_s_bound(8e9, batch=4096, peak_flops=H100_BF16, **kwargs)
    assert capped == pytest.approx(H100_BF16 / (2 * 8e9))


def test_serving_costs_by_hand():
    # 1e9 tokens at 1000 tokens/s = 277.8 GPU-hours: one always-on GPU (730 h), $2/h.
    costs = economics.serving_costs(
        1e9,
        api_cost_per_million=1.0,
        usd_per_hour=2.0,
        tokens_per_s=1000,
        fine_tune_cost=120.0,
        amortize_months=12,
    )
    assert costs.api_per_month_usd == pytest.approx(1000.0)
    assert costs.gpu_hours_per_month == pytest.approx(1e6 / 3600)
    assert costs.pay_per_use_per_month_usd == pytest.approx(10.0 + 2.0 * 1e6 / 3600)
    assert costs.always_on_gpus == 1
    assert costs.always_on_per_month_usd == pytest.approx(10.0 + 2.0 * 730)
    assert costs.cheapest == "pay per use"
    assert (
        economics.serving_costs(
            3e9, api_cost_per_million=1.0, usd_per_hour=2.0, tokens_per_s=1000
        ).always_on_gpus
        == 3
    )  # 833 GPU-hours, each GPU carrying at most half its 730 h (serve_utilisation): 3 GPUs


def test_always_on_gpus_follow_the_one_rule_of_basics():
    # the same rule as the advisor's pods: the load within serve_utilisation of the GPUs kept
    share = assumptions.value("serve_utilisation")
    for tokens in (1e8, 1e9, 3e9, 1e10):
        costs = economics.serving_costs(tokens, api_cost_per_million=1.0, usd_per_hour=2.0, tokens_per_s=1000)
        gpu_hours = tokens / 1000 / 3600
        assert costs.always_on_gpus == max(1, math.ceil(gpu_hours / (730 * share)))
        full = economics.serving_costs(
            tokens, api_cost_per_million=1.0, usd_per_hour=2.0, tokens_per_s=1000, utilisation=1.0
        )
        assert full.always_on_gpus == max(1, math.ceil(gpu_hours / 730))


def test_pay_per_use_breakeven_is_where_the_costs_meet():
    kwargs = {"api_cost_per_million": 1.0, "usd_per_hour": 2.0, "tokens_per_s": 1000, "fine_tune_cost": 120.0}
    volume = economics.breakeven_tokens_per_month(**kwargs)
    self_per_million = economics.cost_per_million_tokens(2.0, 1000)
    assert volume == pytest.approx(10.0 / (1.0 - self_per_million) * 1e6)
    at = economics.serving_costs(volume, **kwargs)
    assert at.pay_per_use_per_month_usd == pytest.approx(at.api_per_month_usd)
    below = economics.serving_costs(0.9 * volume, **kwargs)
    assert below.api_per_month_usd < below.pay_per_use_per_month_usd


def test_always_on_breakeven_is_where_the_costs_meet():
    kwargs = {
        "api_cost_per_million": 1.0,
        "usd_per_hour": 2.0,
        "tokens_per_s": 1000,
        "fine_tune_cost": 120.0,
        "utilisation": 1.0,
    }
    volume = economics.breakeven_tokens_per_month(always_on=True, **kwargs)
    assert volume == pytest.approx((10.0 + 2.0 * 730) * 1e6)
    at = economics.serving_costs(volume, **kwargs)
    assert at.always_on_per_month_usd == pytest.approx(at.api_per_month_usd)
    assert economics.serving_costs(0.99 * volume, **kwargs).cheapest != "always on"


def test_always_on_breakeven_beyond_one_gpu():
    # One GPU makes 1e9 tokens a month and costs $1000 a month; the API charges $1.5 per 1M.
    kwargs = {
        "api_cost_per_million": 1.5,
        "usd_per_hour": 1000 / 730,
        "tokens_per_s": 1e9 / (3600 * 730),
        "amortize_months": 12,
        "always_on": True,
        "utilisation": 1.0,
    }
    # fine-tune $400 a month: one GPU, (400 + 1000) / 1.5 = 933M tokens, within its capacity.
    assert economics.breakeven_tokens_per_month(fine_tune_cost=4800.0, **kwargs) == pytest.approx(1.4e9 / 1.5)
    # $800 a month: one GPU would need 1200M > 1e9 tokens; two: (800 + 2000) / 1.5 = 1867M.
    assert economics.breakeven_tokens_per_month(fine_tune_cost=9600.0, **kwargs) == pytest.approx(2.8e9 / 1.5)


def test_never_breaks_even_when_a_busy_gpu_costs_more_than_the_api():
    kwargs = {"api_cost_per_million": 0.1, "usd_per_hour": 4.0, "tokens_per_s": 100, "fine_tune_cost": 50.0}
    assert economics.breakeven_tokens_per_month(**kwargs) == math.inf
    assert economics.breakeven_tokens_per_month(always_on=True, **kwargs) == math.inf


# --- fine-tune estimates on real models -------------------------------------------------------


def test_fine_tune_estimate_combines_flops_memory_and_price():
    n_params = llms.get("Llama-3.1-8B").n_params  # an input: the catalog's count
    estimate = economics.fine_tune_estimate(
        "Llama-3.1-8B", 10e6, method="lora", gpu="H100", mfu=0.4, usd_per_gpu_hour=2.69
    )
    assert estimate.gpu == "H100 SXM" and estimate.n_gpus == 1 and estimate.dtype == "bf16"
    # by hand: 4 N D FLOPs plus the causal attention at 4,096 tokens, 3 passes of 4 x 32 layers x
    # 4,096 (heads x head_dim) x 2,048 keys per token, at 40% of 989 TFLOP/s (H100 SXM dense bf16:
    # the datasheet's 1,979 with sparsity, halved), $2.69 an hour
    flops = (4 * n_params + 3 * 4 * 32 * 4096 * 2048) * 10e6
    hours = flops / (989e12 * 0.4) / 3600
    assert estimate.flops == pytest.approx(flops)
    assert estimate.attention_flops == pytest.approx(3 * 4 * 32 * 4096 * 2048 * 10e6)
    assert estimate.hours == pytest.approx(hours)
    assert estimate.cost_usd == pytest.approx(hours * 2.69)
    assert estimate.price_source == "given" and "price_rule" not in dict(estimate.assumptions)


def test_fine_tune_estimate_takes_its_defaults_from_the_assumptions():
    estimate = economics.fine_tune_estimate("Llama-3.1-8B", 1e7, gpu="T4")
    taken = dict(estimate.assumptions)
    assert estimate.dtype == "fp16" == taken["compute_dtypes"]  # the T4 has no bf16 tensor cores
    regime = "mfu_multi_gpu" if estimate.n_gpus > 1 else "mfu_single_gpu"  # 16 GB of bf16 weights: two T4s
    assert estimate.mfu == assumptions.value(regime) == taken[regime]
    assert taken["attention_term"] == "causal"
    price = assumptions.device_price(hardware.get("T4"))
    assert estimate.usd_per_gpu_hour == price.usd_per_hour > 0  # never Colab's free tier
    assert taken["precision.lora"] == assumptions.precision_for("lora")


def test_no_price_in_the_data_gives_no_cost():
    priced = {p.gpu for p in price_data.hourly_prices()} | {
        g for p in price_data.serverless_prices() for g in p.gpus
    }
    unpriced = [spec for spec in hardware.catalog("gpu") if spec.name not in priced]
    for spec in unpriced:
        assert economics.fine_tune_estimate("GPT-2 small", 1e6, gpu=spec).cost_usd is None


def test_full_fine_tune_of_8b_needs_more_than_one_80gb_gpu():
    estimate = economics.fine_tune_estimate(
        "Llama-3.1-8B", 1e6, method="full", gpu="H100", usd_per_gpu_hour=1.0
    )
    assert estimate.memory_bytes > 16 * 8e9  # 16 bytes per parameter, plus activations
    assert memory.gpus_needed(estimate.memory_bytes, "H100") == 2  # split evenly, ZeRO's 16 bytes
    # planned with DeepSpeed's ZeRO-3 figure (18 bytes per parameter + the embedding gathered): 3
    assert estimate.gpus_needed == 3
    assert estimate.n_gpus == 4  # rented as a server shape: 1, 2, 4 or 8 GPUs (server_gpu_counts)
    two_gpus = economics.fine_tune_estimate(
        "Llama-3.1-8B", 1e6, method="full", gpu="H100", usd_per_gpu_hour=1.0, n_gpus=4
    )
    assert two_gpus.hours == pytest.approx(estimate.hours * estimate.n_gpus / 4)


def test_qlora_of_a_70b_model_needs_more_than_48gb_and_fits_80gb():
    """Unsloth's Llama 3.3 post (2024-12): Hugging Face + FlashAttention 2 QLoRA of Llama 3.3 70B
    (Llama-3.1-70B's shapes) runs out of memory on a 48 GB GPU and fits 6,916 tokens on 80 GB.
    (The QLoRA paper's 65B on 48 GB had a 32k vocabulary and paged its optimizer to the CPU.)"""

    def gpus(gpu):
        return economics.fine_tune_estimate(
            "Llama-3.1-70B", 1e6, method="qlora", gpu=gpu, usd_per_gpu_hour=1.0, seq_len=2048
        ).n_gpus

    assert gpus("RTX A6000") == 2
    assert gpus("A100 80GB SXM") == 1


def test_full_recomputation_adds_one_forward_pass_to_the_hardware_flops():
    n_params = llms.get("Llama-3.1-8B").n_params
    estimate = economics.fine_tune_estimate(
        "Llama-3.1-8B",
        1e6,
        method="full",
        gpu="H100",
        mfu=0.4,
        usd_per_gpu_hour=1.0,
        recompute="full",
        attention_term="none",
    )
    # model FLOPs 6·N·D; the GPUs also redo the forward pass, 2·N·D: 8·N·D, so 40% MFU is 53% HFU
    assert estimate.flops == pytest.approx(6 * n_params * 1e6)
    assert estimate.hardware_flops == pytest.approx(8 * n_params * 1e6)
    assert estimate.hfu == pytest.approx(0.4 * 8 / 6)
    kept = economics.fine_tune_estimate(
        "Llama-3.1-8B",
        1e6,
        method="full",
        gpu="H100",
        mfu=0.4,
        usd_per_gpu_hour=1.0,
        recompute="none",
        n_gpus=8,
    )
    assert kept.hardware_flops == kept.flops
    with pytest.raises(ValueError, match="mfu=0.8"):
        economics.fine_tune_estimate(
            "Llama-3.1-8B",
            1e6,
            method="full",
            gpu="H100",
            mfu=0.8,
            usd_per_gpu_hour=1.0,
            recompute="full",
            attention_term="none",
        )


def test_a_job_beyond_one_server_rents_whole_8_gpu_servers_at_a_server_price():
    per_node = assumptions.value("max_devices")
    nine = economics.fine_tune_estimate("Llama-3.1-8B", 1e6, method="full", gpu="H100", n_gpus=per_node + 1)
    assert (nine.n_gpus, nine.n_nodes) == (2 * per_node, 2)
    node = min(
        (p for p in price_data.hourly_prices() if p.gpu == "H100 SXM" and p.n_gpus == per_node),
        key=lambda p: p.usd_per_gpu_hour,
    )
    assert nine.usd_per_gpu_hour == node.usd_per_gpu_hour
    assert node.name in nine.price_source
    one_server = economics.fine_tune_estimate("Llama-3.1-8B", 1e6, method="full", gpu="H100", n_gpus=per_node)
    assert (one_server.n_gpus, one_server.n_nodes) == (per_node, 1)


# --- claim checks -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "claimed, low, high, verdict",
    [
        (35.0, 10.76, 49.16, "consistent"),
        (2.50, 21.76, 43.52, "wrong: 8.7x too low"),
        (100.0, 10.0, 20.0, "wrong: 5.0x too high"),
        (11.0, 10.0, 10.0, "consistent"),  # within the 15% tolerance
    ],
)
def test_range_verdict(claimed, low, high, verdict):
    assert economics.range_verdict(claimed, low, high) == verdict


# --- prices: invariants of lab_utils/data/prices.toml, and a few checked by hand ---------------


def test_prices_checked_by_hand():
    # Runpod's GPU pod pricing page, secure cloud, 2026-05: H100 SXM about $2.69 an hour.
    assert price_data.hourly_price("Runpod H100 SXM pod").usd_per_hour == 2.69
    # AWS p5.48xlarge (8 x H100) at launch, 2023-07: $98.32 an hour, cut by up to 45% in 2025-06.
    p5 = price_data.hourly_price("aws p5.48xlarge")
    assert p5.usd_per_gpu_hour == pytest.approx(98.32 / 8)
    assert p5.lowest_usd_per_hour == pytest.approx(98.32 * 0.55)
    # Runpod serverless pricing page, 2025-08: H100 flex $0.00116/s = $4.18/h.
    assert round(price_data.serverless_price("H100").flex_per_hour, 2) == 4.18


def test_price_invariants():
    for price in price_data.api_prices():
        assert 0 < price.input_per_million <= price.output_per_million  # writing costs more than reading
    for price in price_data.serverless_prices():
        assert 0 < price.active_per_s < price.flex_per_s  # always-on workers are discounted
        assert price.flex_per_hour == pytest.approx(price.flex_per_s * 3600)
    for price in price_data.hourly_prices():
        assert price.usd_per_hour >= 0 and (price.n_gpus > 0) != (price.cpu_cores is not None)
        assert price.usd_per_hour > 0 or price.kind in assumptions.value("price_excluded_kinds")
    pods = sorted(price_data.serverless_prices(), key=lambda p: p.flex_per_s)
    assert [p.flex_per_s for p in pods] == [
        p.flex_per_s for p in price_data.serverless_prices()
    ]  # cheapest first


def test_every_price_names_catalog_gpus_and_carries_a_source():
    records = (*price_data.api_prices(), *price_data.hourly_prices(), *price_data.serverless_prices())
    assert all(r.source.strip() and r.date for r in records)
    for record in (*price_data.hourly_prices(), *price_data.serverless_prices()):
        for gpu in (*getattr(record, "gpus", ()), *([record.gpu] if getattr(record, "gpu", None) else [])):
            assert hardware.get(gpu).name == gpu


def test_serverless_price_by_class_or_by_gpu():
    assert price_data.serverless_price("rtx-4090").label == "RTX 4090"
    assert price_data.serverless_price("3090").label == "L4 / A5000 / RTX 3090"
    assert price_data.serverless_price("H100").name == "Runpod serverless H100"
    assert price_data.serverless_price("Runpod serverless H200").gpus == ("H200 SXM",)
    with pytest.raises(ValueError, match="no serverless price lists the T4"):
        price_data.serverless_price("T4")
    with pytest.raises(ValueError, match="nowhere"):
        price_data.serverless_price("nowhere")


def test_lookups_forgive_spelling():
    haiku = price_data.api_price("haiku")
    assert price_data.api_price("Claude-Haiku-4.5") is haiku
    with pytest.raises(ValueError, match="gpt-9"):
        price_data.api_price("gpt-9")


def test_a_malformed_price_row_is_refused():
    row = (
        '[[api]]\nname = "x"\nprovider = "p"\ninput_per_million = 1.0\noutput_per_million = 1.0\n'
        'source = "s"\n'
    )
    with pytest.raises(ValueError, match="date must be"):
        catalogs.parse(row + 'date = "last week"\n', "api", "test", date_key="date")
    with pytest.raises(ValueError, match="lacks required key"):
        catalogs.parse(row, "api", "test", date_key="date")
    with pytest.raises(ValueError, match="catalog's name"):
        price_data._record(
            price_data.ServerlessPrice,
            {
                "name": "x",
                "label": "x",
                "gpus": ["h100"],
                "flex_per_s": 1.0,
                "active_per_s": 1.0,
                "date": "2025",
                "source": "s",
            },
            "test row",
        )


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: economics.training_flops(-1, 10), ValueError, "n_params"),
        (lambda: economics.training_flops(1e9, float("nan")), ValueError, "n_tokens"),
        (lambda: economics.training_flops(1e9, 10, method="dpo"), ValueError, "method"),
        (lambda: economics.training_flops("8B", 10), TypeError, "n_params"),
        (lambda: economics.training_hours(1e18, peak_flops=1e15, mfu=1.5), ValueError, "mfu"),
        (lambda: economics.training_hours(1e18, peak_flops=0, mfu=0.4), ValueError, "peak_flops"),
        (
            lambda: economics.training_hours(1e18, peak_flops=1e15, mfu=0.4, n_devices=0),
            ValueError,
            "n_devices",
        ),
        (lambda: economics.cost_per_million_tokens(1.0, 0), ValueError, "tokens_per_s"),
        (lambda: economics.cost_per_million_tokens(-1.0, 10), ValueError, "usd_per_hour"),
        (
            lambda: economics.api_cost(-5, 1, price_in_per_million=1, price_out_per_million=1),
            ValueError,
            "input_tokens",
        ),
        (lambda: economics.blended_price_per_million(1, 1, output_share=2), ValueError, "output_share"),
        (
            lambda: economics.decode_tokens_per_s_bound(7e9, bytes_per_param=0, bandwidth_bytes_per_s=1e12),
            ValueError,
            "bytes_per_param",
        ),
        (
            lambda: economics.decode_tokens_per_s_bound(
                7e9, bytes_per_param=2, bandwidth_bytes_per_s=1e12, batch=1.5
            ),
            TypeError,
            "batch",
        ),
        (
            lambda: economics.serving_costs(
                1e6, api_cost_per_million=1, usd_per_hour=1, tokens_per_s=10, amortize_months=0
            ),
            ValueError,
            "amortize_months",
        ),
        (
            lambda: economics.fine_tune_estimate("Llama-3.1-8B", 1e6, method="dpo", usd_per_gpu_hour=1),
            ValueError,
            "method",
        ),
        (
            lambda: economics.fine_tune_estimate(
                "Llama-3.1-8B", 1e6, gpu="T4", dtype="bf16", usd_per_gpu_hour=1
            ),
            ValueError,
            "dtype",
        ),
        (lambda: economics.fine_tune_estimate("Llama-3.1-8B", 1e6, mfu=0), ValueError, "mfu"),
        (lambda: economics.range_verdict(1, 5, 2), ValueError, "high"),
    ],
)
def test_bad_input_is_refused(call, error, match):
    with pytest.raises(error, match=match):
        call()


# --- properties -------------------------------------------------------------------------------

prices = st.floats(min_value=0.01, max_value=1e3)
rates = st.floats(min_value=1.0, max_value=1e5)


@given(price=prices, more=st.floats(min_value=1.0, max_value=10.0), tokens_per_s=rates)
def test_a_higher_price_never_costs_less(price, more, tokens_per_s):
    assert economics.cost_per_million_tokens(price * more, tokens_per_s) >= economics.cost_per_million_tokens(
        price, tokens_per_s
    )


@given(
    api=st.floats(min_value=0.05, max_value=50),
    price=prices,
    tokens_per_s=rates,
    fine_tune=st.floats(min_value=1.0, max_value=1e5),
    always_on=st.booleans(),
)
def test_breakeven_is_where_self_hosting_stops_costing_more(api, price, tokens_per_s, fine_tune, always_on):
    kwargs = {
        "api_cost_per_million": api,
        "usd_per_hour": price,
        "tokens_per_s": tokens_per_s,
        "fine_tune_cost": fine_tune,
    }
    volume = economics.breakeven_tokens_per_month(always_on=always_on, **kwargs)
    if math.isfinite(volume):
        for factor in (1.0, 0.999):
            costs = economics.serving_costs(volume * factor, **kwargs)
            self_hosted = costs.always_on_per_month_usd if always_on else costs.pay_per_use_per_month_usd
            if factor == 1.0:  # at the volume: no dearer than the API
                assert self_hosted <= costs.api_per_month_usd * (1 + 1e-9)
            else:  # just below it: dearer
                assert costs.api_per_month_usd < self_hosted


# --- the calculator (lab_utils.widgets.cost_calculator) ---------------------------------------


def test_cost_calculator_static_figure_is_labelled():
    import matplotlib.pyplot as plt

    from lab_utils import widgets

    fig = widgets.cost_calculator(model="Llama-3.1-8B", gpu="H100", api="haiku", static=True)
    ax = fig.axes[0]
    assert "Llama-3.1-8B" in ax.get_title() and "Claude Haiku 4.5" in ax.get_title()
    assert ax.get_xlabel().endswith("(requests)") and ax.get_ylabel().endswith("(US dollars)")
    assert [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")] == [
        "H100 SXM always on",
        "Runpod serverless H100",
        "per token: Llama-3.1-8B on DeepInfra (unverified price)",
        "API: Claude Haiku 4.5",
    ]
    plt.close(fig)


def test_cost_calculator_panel_redraws_and_reports_bad_choices():
    pytest.importorskip("ipywidgets")
    import matplotlib.pyplot as plt

    from lab_utils import widgets

    panel = widgets.cost_calculator()
    panel.controls["gpu"].value = "RTX 4090"
    panel.controls["model"].value = "Llama-3.1-70B"  # needs several 24 GB cards: still drawn
    with pytest.raises(ValueError, match="api"):
        widgets.cost_calculator(api="no such api")
    with pytest.raises(TypeError, match="static"):
        widgets.cost_calculator(static="yes")
    plt.close("all")


def test_cost_calculator_draws_the_given_volumes_with_the_same_figures(monkeypatch):
    """A coarser grid (notebook 05 draws decades) asks the advisor fewer questions and gets the
    same answers at the volumes both grids share; the live panel redraws on that grid."""
    pytest.importorskip("ipywidgets")
    import matplotlib.pyplot as plt

    from lab_utils import widgets, widgets_cost

    decades = (10, 1_000, 100_000)
    coarse = widgets.cost_curves("Llama-3.1-8B", "H100 SXM", requests_per_day_grid=decades)
    fine = widgets.cost_curves("Llama-3.1-8B", "H100 SXM")
    assert fine["lines"].keys() == coarse["lines"].keys()
    for label, points in coarse["lines"].items():
        assert [volume for volume, _, _ in points] == list(decades)
        default = {volume: usd for volume, _, usd in fine["lines"][label]}
        for volume, _, usd in points:
            assert usd == pytest.approx(default[volume])
    fig = widgets.cost_calculator("Llama-3.1-8B", "H100 SXM", static=True, requests_per_day_grid=decades)
    assert all(
        list(line.get_xdata()) == list(decades)
        for line in fig.axes[0].get_lines()
        if not line.get_label().startswith("_")
    )
    panel = widgets.cost_calculator("Llama-3.1-8B", "H100 SXM", requests_per_day_grid=decades)
    asked, serve = [], widgets_cost.advisor.serve  # the module the cost calculator asks
    monkeypatch.setattr(
        widgets_cost.advisor,
        "serve",
        lambda model, volume, **kw: asked.append(volume) or serve(model, volume, **kw),
    )
    panel.controls["gpu"].value = "L4"  # a redraw asks about the same volumes
    assert asked == list(decades)
    for bad in ((), (0, 10), ("many",)):
        with pytest.raises((TypeError, ValueError), match="requests_per_day_grid"):
            widgets.cost_curves(requests_per_day_grid=bad)
    plt.close("all")


# --- the attention term and MFU by regime (issue 25, item 4) ------------------------------------

LLAMA8_ATTENTION_8K = (
    4 * 32 * 32 * 128 * 4096
)  # forward, per token: 4 x layers x heads x head_dim x 8,192/2 keys


def test_attention_flops_worked_by_hand():
    assert economics.attention_flops_per_token("llama-3.1-8b", 8192) == LLAMA8_ATTENTION_8K
    assert economics.attention_flops_per_token("llama-3.1-8b", 8192, causal=False) == 2 * LLAMA8_ATTENTION_8K
    n = llms.get("llama-3.1-8b").n_params
    causal = economics.training_flops(n, 1, "full", model="llama-3.1-8b", seq_len=8192)
    assert causal == 6 * n + 3 * LLAMA8_ATTENTION_8K
    assert causal / (6 * n) - 1 == pytest.approx(0.134, abs=0.001)  # the "about 13% at 8k"
    # PaLM's 12·L·H·Q·T per training token, as torchtitan counts MFU
    palm = economics.training_flops(
        n, 1, "full", model="llama-3.1-8b", seq_len=8192, attention_term="non_causal"
    )
    assert palm - 6 * n == 12 * 32 * 32 * 128 * 8192
    # inference: one forward pass; LoRA: the weights' 4·N, the attention's three passes still
    assert (
        economics.training_flops(n, 1, "inference", model="llama-3.1-8b", seq_len=8192)
        == 2 * n + LLAMA8_ATTENTION_8K
    )
    assert (
        economics.training_flops(n, 1, "lora", model="llama-3.1-8b", seq_len=8192)
        == 4 * n + 3 * LLAMA8_ATTENTION_8K
    )


def test_6nd_stays_a_named_option_and_the_count_without_a_shape():
    n = llms.get("llama-3.1-8b").n_params
    assert (
        economics.training_flops(n, 10, "full", model="llama-3.1-8b", seq_len=8192, attention_term="none")
        == 60 * n
    )
    assert economics.training_flops(n, 10) == 60 * n
    with pytest.raises(ValueError, match="attention_term"):
        economics.training_flops(n, 10, attention_term="causal")
    with pytest.raises(ValueError, match="seq_len"):
        economics.training_flops(n, 10, model="llama-3.1-8b")
    with pytest.raises(ValueError, match="attention_term"):
        economics.training_flops(n, 10, model="llama-3.1-8b", seq_len=8, attention_term="flash")
    shapeless = llms.LLMConfig(
        name="a bare count", aliases=(), n_layers=2, hidden=8, n_params=1000, source="t", source_date="2026"
    )
    with pytest.raises(ValueError, match="a bare count"):
        economics.attention_flops_per_token(shapeless, 8)


def test_a_sliding_window_caps_the_keys_a_query_sees():
    mistral = llms.get("mistral-7b-v0.1")
    window, seq_len = mistral.sliding_window, 2 * mistral.sliding_window
    keys = sum(min(i, window) for i in range(1, seq_len + 1)) / seq_len  # counted query by query
    per_key = 4 * mistral.n_layers * mistral.n_heads * mistral.head_dim
    assert economics.attention_flops_per_token(mistral, seq_len) == pytest.approx(per_key * keys, rel=1e-3)


def _implied_mfu(model, method, seq_len, tokens_per_s, gpu, dtype="bf16"):
    per_token = economics.training_flops(llms.get(model).n_params, 1, method, model=model, seq_len=seq_len)
    return tokens_per_s * per_token / hardware.get(gpu).peak_flops[dtype]


def test_each_mfu_regime_lies_within_the_published_runs_it_cites():
    # torchtitan, Llama 3.1 8B on 8 H100s at 8,192 tokens, FSDP: 5,762 tokens/s per GPU, 6,667 compiled
    eager = _implied_mfu("llama-3.1-8b", "full", 8192, 5762, "H100 SXM")
    compiled = _implied_mfu("llama-3.1-8b", "full", 8192, 6667, "H100 SXM")
    assert round(eager, 2) == 0.32 and round(compiled, 2) == 0.37
    assert eager <= assumptions.value("mfu_multi_gpu") <= compiled
    # the same with Float8 linears: 8,532 tokens/s per GPU, against the FP8 peak
    assert round(_implied_mfu("llama-3.1-8b", "full", 8192, 8532, "H100 SXM", "fp8"), 2) == assumptions.value(
        "mfu_fp8"
    )
    # torchtune, one GPU, LoRA compiled: Llama 3.2 3B on an A100 at 4,096 tokens, 8,210 tokens/s;
    # Llama 3.1 8B on an RTX 4090 at 2,048 tokens, 3,083 tokens/s
    low = _implied_mfu("llama-3.2-3b", "lora", 4096, 8210, "A100 80GB SXM")
    high = _implied_mfu("llama-3.1-8b", "lora", 2048, 3083, "RTX 4090")
    assert (round(low, 2), round(high, 2)) == (0.39, 0.63)
    assert low <= assumptions.value("mfu_single_gpu") <= high


def test_fine_tune_estimate_takes_the_mfu_of_its_regime():
    def taken(**job):
        estimate = economics.fine_tune_estimate(usd_per_gpu_hour=1.0, **job)
        return estimate, dict(estimate.assumptions)

    one, names = taken(model="llama-3.1-8b", n_tokens=1e6, method="lora", gpu="H100")
    assert one.n_gpus == 1 and one.mfu == names["mfu_single_gpu"] == assumptions.value("mfu_single_gpu")
    many, names = taken(model="llama-3.1-70b", n_tokens=1e6, method="full", gpu="H100")
    assert many.n_gpus > 1 and many.mfu == names["mfu_multi_gpu"] == assumptions.value("mfu_multi_gpu")
    fp8, names = taken(model="llama-3.1-8b", n_tokens=1e6, method="lora", gpu="H100", dtype="fp8")
    assert fp8.mfu == names["mfu_fp8"] and "mfu_single_gpu" not in names
    given, names = taken(model="llama-3.1-8b", n_tokens=1e6, gpu="H100", mfu=0.3)
    assert given.mfu == 0.3 and not any(name.startswith("mfu") for name in names)
    assert economics.mfu_assumption(1, "bf16") == "mfu_single_gpu"
    with pytest.raises(ValueError, match="n_gpus"):
        economics.mfu_assumption(0, "bf16")


def test_model_and_hardware_flops_with_full_recomputation_and_attention():
    n = llms.get("llama-3.1-8b").n_params
    estimate = economics.fine_tune_estimate(
        "llama-3.1-8b", 1e6, method="lora", gpu="H100", seq_len=8192, recompute="full", usd_per_gpu_hour=1.0
    )
    # model: 4·N + 3 attention passes; executed: one more forward pass, 2·N + 1 attention pass
    assert estimate.flops == pytest.approx((4 * n + 3 * LLAMA8_ATTENTION_8K) * 1e6)
    assert estimate.hardware_flops == pytest.approx((6 * n + 4 * LLAMA8_ATTENTION_8K) * 1e6)
    assert estimate.hfu == pytest.approx(estimate.mfu * estimate.hardware_flops / estimate.flops)
    bare = llms.LLMConfig(
        name="a bare count",
        aliases=(),
        n_layers=61,
        hidden=7168,
        n_params=10**12,
        source="t",
        source_date="2026",
    )
    moe = economics.fine_tune_estimate(bare, 1e6, method="qlora", gpu="H100", usd_per_gpu_hour=1.0)
    assert moe.attention_flops == 0 and "attention_term" not in dict(moe.assumptions)  # no shape: 6ND's count
