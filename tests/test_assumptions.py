"""lab_utils.assumptions: one home for every default, and one answer wherever a job is asked."""

import re

import pytest

from lab_utils import advisor, assumptions, cli, hardware, memory, prices


def test_every_assumption_has_a_value_and_a_short_why():
    entries = assumptions.catalog()
    assert len({a.name for a in entries}) == len(entries) > 20
    for entry in entries:
        assert entry.value is not None and entry.why.strip()
        assert len(entry.line()) < 140, entry.name  # one short line in every CLI answer


def test_each_method_runs_in_a_precision_the_memory_model_allows():
    for method in assumptions.METHODS:
        assert assumptions.precision_for(method) in memory.precisions_for(method)
    with pytest.raises(ValueError, match="method"):
        assumptions.precision_for("dpo")


@pytest.mark.parametrize(
    "device, dtype",
    [("T4", "fp16"), ("H100 SXM", "bf16"), ("A100 80GB SXM", "bf16"), ("AMD EPYC 9684X", "fp32")],
)
def test_the_dtype_a_device_computes_in(device, dtype):
    # T4: Turing tensor cores have fp16 but no bf16 (NVIDIA T4 datasheet); catalog CPUs: an fp32 peak.
    assert assumptions.compute_dtype(hardware.get(device)) == dtype


def test_a_device_price_is_never_a_notebook_tier_or_zero():
    excluded = assumptions.value("price_excluded_kinds")
    offers = {p.name: p for p in prices.hourly_prices()}
    for spec in hardware.catalog("gpu"):
        price = assumptions.device_price(spec)
        if price.usd_per_hour is not None:
            assert price.usd_per_hour > 0
            if price.offer in offers:
                assert offers[price.offer].kind not in excluded
    # by hand: the T4's cheapest rentable offer is AWS g4dn.xlarge, $0.526 an hour (AWS on-demand list)
    t4 = assumptions.device_price(hardware.get("T4"))
    assert (t4.offer, t4.usd_per_hour) == ("AWS g4dn.xlarge", 0.526)


def test_unknown_names_are_refused():
    with pytest.raises(ValueError, match="mfu_typo"):
        assumptions.get("mfu_typo")


def _cli_out(args, capsys) -> str:
    assert cli.main(args) == 0
    return capsys.readouterr().out


def _dollars(text: str, label: str) -> float:
    return float(re.search(rf"{label}\s+\$([\d,]+\.\d\d)", text).group(1).replace(",", ""))


@pytest.mark.parametrize("method", ["full", "lora", "qlora"])
def test_the_cli_the_advisor_and_the_widgets_agree_on_one_job(method, capsys):
    """One fine-tune of Llama-3.1-8B on 1e8 tokens: the same memory and the same dollars from the
    command line, the advisor and the calculators, each with its own defaults."""
    import matplotlib.pyplot as plt

    from lab_utils import widgets
    from lab_utils.units import format_bytes

    advice = advisor.fine_tune("llama-3.1-8b", 1e8, method=method, include_cpus=False)
    option = next(o for o in advice.options if o.device == "H100 SXM" and o.kind == "gpu")

    cost = _cli_out(
        [
            "cost",
            "fine-tune",
            "--model",
            "llama-3.1-8b",
            "--tokens",
            "1e8",
            "--method",
            method,
            "--gpu",
            "H100 SXM",
        ],
        capsys,
    )
    assert _dollars(cost, "cost") == round(option.cost_per_job_usd, 2)
    assert f"{option.n_devices} x H100 SXM" in cost

    shown = _cli_out(["memory", "--model", "llama-3.1-8b", "--method", method], capsys)
    total = re.search(r"^total\s+(.+)$", shown, re.MULTILINE).group(1).strip()
    assert total == format_bytes(option.memory_bytes, binary=False)

    figure = widgets.memory_calculator("llama-3.1-8b", method=method, static=True)
    assert figure.axes[0].get_title().endswith(format_bytes(option.memory_bytes, binary=False))
    plt.close(figure)

    calculator = widgets.cost_calculator(
        "llama-3.1-8b", gpu="H100 SXM", method=method, fine_tune_tokens=1e8, static=True
    )
    note = " ".join(text.get_text() for text in calculator.texts)
    assert f"${option.cost_per_job_usd:,.2f}" in note
    plt.close(calculator)


def test_every_assumption_has_a_source_its_date_and_when_it_was_checked(monkeypatch):
    """A record without a source, a YYYY-MM source_date and a YYYY-MM checked (not before the
    source) fails to load: every default says where it comes from, how old that is, and when
    the course last compared the two."""
    from lab_utils import catalogs

    for entry in assumptions.catalog():
        assert entry.source.strip() and len(entry.source_date) == len(entry.checked) == 7, entry.name
        assert entry.source_date <= entry.checked, entry.name
    # the source's own date, not the day the course read it (torchtitan's runs of 2024-12)
    assert assumptions.get("mfu_multi_gpu").source_date == "2024-12"
    record = {"value": 0.4, "why": "a reason", "source": "course choice"}
    monkeypatch.setattr(catalogs, "read", lambda name: {"mfu": record})
    for given, match in [
        ({}, "source_date and checked"),
        ({"date": "2026-12"}, "source_date and checked"),  # the old, ambiguous key
        ({"source_date": "2026", "checked": "2026-12"}, "source_date must be YYYY-MM"),
        ({"source_date": "2026-12", "checked": "2026-11"}, "before source_date"),
    ]:
        record.update(given)
        assumptions._load.cache_clear()
        try:
            with pytest.raises(ValueError, match=match):
                assumptions.catalog()
        finally:
            for key in given:
                record.pop(key)
            assumptions._load.cache_clear()


def test_resolve_takes_the_assumption_for_none_and_records_it():
    values, taken = assumptions.resolve(mfu=None, seq_len=2048, precision__inference=None)
    assert values == {"mfu": 0.4, "seq_len": 2048, "precision.inference": "checkpoint"}
    assert taken == {"mfu": 0.4, "precision.inference": "checkpoint"}


def test_the_price_rule_honours_the_callers_max_devices(monkeypatch):
    """Beyond one server of the caller's max_devices GPUs, whole servers of that size: 4 GPUs on
    servers of 2 rent two 2-GPU servers (the assumption's 8 GPUs per server would have priced
    them as four 1-GPU pods)."""
    from dataclasses import replace

    h100 = hardware.get("H100 SXM")
    pod = prices.hourly_price("Runpod H100 SXM pod")
    pair = replace(pod, name="a 2-GPU H100 server", n_gpus=2, usd_per_hour=2 * pod.usd_per_hour + 0.5)
    offers = prices.hourly_prices()
    monkeypatch.setattr(prices, "hourly_prices", lambda: (*offers, pair))
    assert assumptions.device_price(h100, n_gpus=4).offer == pod.name  # within one server of 8
    two = assumptions.device_price(h100, n_gpus=4, max_devices=2)
    assert (two.offer, two.usd_per_hour) == ("a 2-GPU H100 server, per GPU", pair.usd_per_gpu_hour)
    assert assumptions.device_price(h100, n_gpus=2, max_devices=2).offer == pod.name  # one server
    # no offer of a 4-GPU server in the data: the cheapest per GPU, and the label says so
    four = assumptions.device_price(h100, n_gpus=8, max_devices=4)
    assert four.offer == f"{pod.name}, per GPU (no offer of one 4-GPU server in the data)"
    with pytest.raises(ValueError, match="max_devices"):
        assumptions.device_price(h100, n_gpus=4, max_devices=0)
    # the fine-tune's price follows: economics passes its max_devices on
    from lab_utils import economics

    job = economics.fine_tune_estimate(
        "llama-3.1-8b", 1e8, method="lora", gpu="H100 SXM", n_gpus=4, max_devices=2
    )
    assert (job.n_gpus, job.n_nodes, job.usd_per_gpu_hour) == (4, 2, pair.usd_per_gpu_hour)


def test_an_edit_of_the_cuda_context_reaches_memory_when_asked(monkeypatch):
    """memory reads the cuda_context_* assumptions at call time, not once at import."""
    from lab_utils import catalogs

    h100 = hardware.get("H100 SXM")
    before = memory.usable_bytes(h100)
    data = {name: dict(entry) for name, entry in catalogs.read("assumptions.toml").items()}
    data["cuda_context_bytes"]["value"] = 1e9
    monkeypatch.setattr(catalogs, "read", lambda name: data)
    assumptions._load.cache_clear()
    try:
        assert memory.CUDA_CONTEXT_BYTES[1] == 1e9
        assert memory.usable_bytes(h100) == h100.memory_bytes - 1e9 > before
    finally:
        assumptions._load.cache_clear()


def test_lora_params_defaults_to_the_lora_assumptions():
    rank, targets = assumptions.value("lora_rank"), assumptions.value("lora_targets")
    assert targets == "all-linear"
    assert memory.lora_params("llama-3.1-8b") == memory.lora_params("llama-3.1-8b", rank, targets)
    assert memory.lora_params("llama-3.1-8b") > memory.lora_params("llama-3.1-8b", targets="attention")


def test_the_blended_api_price_takes_the_typical_requests_share():
    """No output_share assumption of its own: the share written is the typical request's
    (output_tokens of input_tokens + output_tokens), as the advisor and notebook 08 count it."""
    from lab_utils import economics

    share = assumptions.value("output_tokens") / (
        assumptions.value("input_tokens") + assumptions.value("output_tokens")
    )
    assert economics.blended_price_per_million(1.0, 5.0) == pytest.approx(1.0 + 4.0 * share)
    assert "output_share" not in {a.name for a in assumptions.catalog()}


def test_every_price_has_a_date_and_an_undated_one_is_refused():
    from lab_utils import catalogs

    for record in (*prices.api_prices(), *prices.hourly_prices(), *prices.serverless_prices()):
        assert catalogs.DATE.match(record.date), (record.name, record.date)
    row = '[[hourly]]\nname = "x"\nprovider = "p"\nkind = "gpu pod"\nusd_per_hour = 1.0\nsource = "s"\n'
    for date in ('date = "undated"\n', ""):
        with pytest.raises(ValueError, match="date"):
            catalogs.parse(row + date, "hourly", "test", date_key="date")
    assert catalogs.parse(row + 'date = "2026-12"\n', "hourly", "test", date_key="date")
