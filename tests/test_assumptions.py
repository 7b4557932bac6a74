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
    option = next(o for o in advice.options if o.name.split(" x ")[-1] == "H100 SXM")

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
    assert _dollars(cost, "cost") == round(option.cost_usd, 2)
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
    assert f"${option.cost_usd:,.2f}" in note
    plt.close(calculator)


def test_every_assumption_has_a_source_and_a_date(monkeypatch):
    """A record without a source or a YYYY-MM date fails to load: every default says where it
    comes from (a citation or "course choice") and when."""
    from lab_utils import catalogs

    for entry in assumptions.catalog():
        assert entry.source.strip() and len(entry.date) == 7, entry.name
    undated = {"mfu": {"value": 0.4, "why": "a reason", "source": "course choice"}}
    monkeypatch.setattr(catalogs, "read", lambda name: undated)
    assumptions._load.cache_clear()
    try:
        with pytest.raises(ValueError, match="date"):
            assumptions.catalog()
        undated["mfu"]["date"] = "2026"
        with pytest.raises(ValueError, match="YYYY-MM"):
            assumptions.catalog()
    finally:
        assumptions._load.cache_clear()


def test_resolve_takes_the_assumption_for_none_and_records_it():
    values, taken = assumptions.resolve(mfu=None, seq_len=2048, precision__inference=None)
    assert values == {"mfu": 0.4, "seq_len": 2048, "precision.inference": "checkpoint"}
    assert taken == {"mfu": 0.4, "precision.inference": "checkpoint"}
