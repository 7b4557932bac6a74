"""The course against the world (issue 25, item 7): every published measurement in
lab_utils/data/published.toml against the course's answer for the same setup. A bound beaten by
a measurement, or looser than the file's bound_max_ratio, fails; an estimate outside
estimate_max_ratio either way fails. A record with expected_miss is an expected failure, strict:
the day the course answers it well (another item of issue 25 merged), it fails as XPASS and the
lead removes its expected_miss."""

import dataclasses
import importlib.util
import re
from pathlib import Path

import pytest

from lab_utils import published

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("published_page", ROOT / "scripts" / "published_page.py")
published_page = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(published_page)


def _case(measurement):
    marks = ()
    if measurement.expected_miss:
        marks = (pytest.mark.xfail(strict=True, reason=measurement.expected_miss),)
    return pytest.param(measurement, id=measurement.name, marks=marks)


@pytest.mark.parametrize("measurement", [_case(m) for m in published.measurements()])
def test_the_course_holds_against_the_published_measurement(measurement):
    row = published.compare(measurement)
    low, high = row.band
    assert row.within, (
        f"{measurement.name}: measured {measurement.figure:.4g} {measurement.unit}, the course "
        f"says {row.course_value:.4g} ({measurement.course}): ratio {row.ratio:.2f} outside "
        f"{low:.2f}-{high:.2f}"
    )


def test_the_collection_covers_cpus_gpus_and_every_area():
    found = published.measurements()
    assert len(found) >= 20
    assert {m.device_kind for m in found} == {"cpu", "gpu"}
    assert {m.area for m in found} == {"compute", "inference", "training", "memory", "cold start", "energy"}
    assert {m.course for m in found} == set(published.COURSE_KINDS)


def test_the_bands_are_the_issues():
    assert published.bands() == {"bound": 1.7, "estimate": 1.5}


def test_every_measurement_is_cited_in_the_bibliography():
    keys = set(re.findall(r"^@\w+\{([^,]+),", (ROOT / "book" / "references.bib").read_text(), re.M))
    missing = {m.cite for m in published.measurements()} - keys
    assert not missing, f"add these to book/references.bib: {missing}"
    assert all(m.url.startswith("https://") for m in published.measurements())


def test_a_bound_is_a_ceiling_and_an_estimate_goes_both_ways():
    bound = published.compare(published.get("mamf-h100-sxm-bf16"))
    assert bound.band == (1.0, 1.7)
    assert bound.course_value == 989e12  # the H100's dense bf16 peak, from the hardware catalog
    beaten = dataclasses.replace(bound.measurement, figure=1.1 * bound.course_value)
    assert not published.compare(beaten).within
    estimate = published.compare(published.get("torchtitan-llama31-8b-fsdp-8xh100"))
    assert estimate.band == pytest.approx((1 / 1.5, 1.5))
    for factor, inside in ((1.4, True), (1 / 1.4, True), (1.6, False), (1 / 1.6, False)):
        moved = dataclasses.replace(estimate.measurement, figure=estimate.course_value / factor)
        assert published.compare(moved).within is inside


def test_a_time_is_compared_the_other_way_round():
    cold = published.compare(published.get("vllm-coldstart-rtx5090-runpod"))
    assert cold.ratio == pytest.approx(cold.measurement.figure / cold.course_value)


def test_the_course_answer_is_computed_by_the_calculators():
    from lab_utils import serving

    row = published.compare(published.get("llamacpp-rtx4090-llama3-8b-f16"))
    step_s = serving.decode_step_s(
        "Llama-3.1-8B", device="RTX 4090", context_len=512, weight_bytes_per_param=2.0
    )
    assert row.course_value == pytest.approx(1 / step_s)


def test_a_lone_request_and_a_full_server_are_the_serving_estimates():
    from lab_utils import serving

    row = published.compare(published.get("redhat-vllm072-llama8b-fp8-1xh100-256-1024"))
    alone = serving.estimate(
        "Llama-3.1-8B", device="H100 SXM", prompt_len=256, output_len=1024, precision="fp8", engine="vllm"
    )
    assert alone.batch == 1 and row.course_value == pytest.approx(alone.latency_s)
    pair = published.request_latency_s(
        model="Llama-3.1-70B",
        device="H100 SXM",
        n_devices=2,
        prompt_len=256,
        output_len=1024,
        precision="fp8",
    )
    two = serving.replica("H100 SXM", 2)
    assert pair == pytest.approx(
        serving.estimate(
            "Llama-3.1-70B", device=two, prompt_len=256, output_len=1024, precision="fp8"
        ).latency_s
    )
    full = dict(model="Llama-3.1-8B", device="H100 SXM", prompt_len=768, output_len=128, engine="vllm")
    assert published.server_requests_per_s(**full) * 128 == pytest.approx(
        published.server_output_tokens_per_s(**full)
    )


def test_the_longest_sequence_is_the_edge_of_what_fits():
    from lab_utils import hardware, memory

    shape = dict(model="Llama-3.1-8B", method="qlora", batch=1, lora_rank=32, lora_targets="all-linear")
    longest = published.longest_sequence_tokens(device="A100 80GB SXM", **shape)

    def total(n):
        return memory.job_estimate(
            shape["model"], method="qlora", batch=1, seq_len=n, lora_rank=32, lora_targets="all-linear"
        ).total_bytes

    spec = hardware.get("A100 80GB SXM")
    assert memory.fits(total(longest), spec) and not memory.fits(total(longest + 1), spec)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"question": "guess"}, "question must be one of"),
        ({"course": "vibe"}, "course must be one of"),
        ({"area": "vibes"}, "area must be one of"),
        ({"unit": "FLOP/s"}, "is not the unit of question"),
        ({"colour": "red"}, "unknown key"),
    ],
)
def test_a_malformed_record_is_refused_naming_what_is_wrong(change, message):
    record = {
        "name": "x",
        "source": "s",
        "source_date": "2025-01",
        "title": "t",
        "url": "https://e",
        "cite": "c",
        "setup": "s",
        "area": "training",
        "device_kind": "gpu",
        "figure": 1.0,
        "unit": "tokens/s",
        "question": "training_tokens_per_s",
        "course": "estimate",
        "inputs": {},
    }
    with pytest.raises(ValueError, match=message):
        published._measurement({**record, **change}, "published.toml")


def test_the_page_is_generated_from_the_data_and_up_to_date():
    page = (ROOT / "book" / "published.md").read_text(encoding="utf-8")
    assert page == published_page.markdown(), "run python scripts/published_page.py"
    for m in published.measurements():
        assert m.url in page and f"{{cite:p}}`{m.cite}`" in page


def test_the_page_is_in_the_table_of_contents():
    assert "file: book/published" in (ROOT / "_toc.yml").read_text()


def test_a_records_options_reach_the_calculator_as_they_are():
    # so a record can name a calculator keyword added later (precision=, loss_impl=, ...) in the data alone
    fp8 = published.decode_tokens_per_s(
        model="Llama-3.1-8B", device="H100 SXM", context_len=512, weight_bytes_per_param=1.0
    )
    bf16 = published.decode_tokens_per_s(model="Llama-3.1-8B", device="H100 SXM", context_len=512)
    assert fp8 > 1.5 * bf16
    with pytest.raises(TypeError):
        published.server_output_tokens_per_s(
            model="Llama-3.1-8B", device="H100 SXM", prompt_len=128, output_len=128, colour="red"
        )


def test_the_headline_counts_each_measured_figure_once():
    rows = published.table()
    groups = published.distinct_figures(rows)
    assert sum(len(group) for group in groups) == len(rows)
    # a bound and its estimate through an engine profile hold one published figure
    pair = next(
        g for g in groups if {r.measurement.name for r in g} >= {"trtllm-llama31-8b-fp8-h100-2048-128"}
    )
    assert {r.measurement.name for r in pair} == {
        "trtllm-llama31-8b-fp8-h100-2048-128",
        "trtllm-llama31-8b-fp8-h100-2048-128-estimate",
    }
    measured = [g for g in groups if g[0].measurement.measured]
    met = sum(any(r.within for r in g) for g in measured)
    assert f"meets {met} of the {len(measured)} distinct published figures" in published_page.headline(rows)
    # planted: one figure held twice, one report; the headline says 1 of 1, not 2 of 3
    row = rows[0]
    twice = (row, dataclasses.replace(row, measurement=dataclasses.replace(row.measurement, name="y")))
    report = dataclasses.replace(
        row, measurement=dataclasses.replace(row.measurement, name="z", figure=1.0, measured=False)
    )
    text = published_page.headline((*twice, report))
    assert f"meets {int(row.within)} of the 1 distinct" in text and "1 row being a report" in text


def test_a_report_nobody_timed_is_marked_and_not_a_measurement():
    report = published.get("worker-vllm-flashboot-llama31-8b")
    assert not report.measured and "nothing was timed" in report.setup
    assert sum(not m.measured for m in published.measurements()) == 1
    with pytest.raises(ValueError, match="measured must be true or false"):
        published._measurement(
            {
                **{k: "x" for k in published._STR_FIELDS},
                "name": "x",
                "source": "s",
                "source_date": "2025-01",
                "area": "training",
                "device_kind": "gpu",
                "unit": "tokens/s",
                "question": "training_tokens_per_s",
                "course": "estimate",
                "figure": 1.0,
                "inputs": {},
                "measured": "no",
            },
            "published.toml",
        )


def test_figures_are_the_sources_own():
    # Unsloth's table, not its rounded prose; the Float8 run against the FP8 peak
    assert published.get("unsloth-llama31-8b-qlora-hf-80gb").figure == 28454
    fp8 = published.compare(published.get("torchtitan-llama31-8b-fsdp-compile-fp8-8xh100"))
    bf16_inputs = {**dict(fp8.measurement.inputs), "dtype": "bf16"}
    assert fp8.course_value == pytest.approx(2 * published.training_tokens_per_s(**bf16_inputs), rel=0.01)
    # MLPerf's score: of the five runs, the fastest and the slowest dropped, the mean of the rest
    dlrm = published.get("mlperf-train21-dlrm-2xspr")
    runs = sorted(float(t.replace(",", "")) for t in re.findall(r"\d,\d{3}\.\d", dlrm.setup)[:5])
    assert len(runs) == 5 and dlrm.figure == pytest.approx(sum(runs[1:4]) / 3, abs=0.2)
    # TensorRT-LLM's page moves between versions: its rows cite the v1.0 page at a commit
    trtllm = [m for m in published.measurements() if "TensorRT-LLM" in m.url]
    assert trtllm and all(re.search(r"/blob/[0-9a-f]{40}/", m.url) for m in trtllm)
