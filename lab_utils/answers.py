"""Answers first: the questions each notebook answers, with a short answer for the course's
default setup, computed by the calculators when asked (never typed), and the section deriving it.

Each notebook opens with its questions; its first cell after the setup prints
:func:`markdown` of its number, and the website's intro page lists every notebook's
(:func:`course_markdown`). :func:`serve_7b` answers "can I serve a 7B model here, how fast?" for
one catalog device: the bandwidth bound beside an engine's published figure, and what the place
cannot do (Colab hosts no endpoint).

>>> [answer.section for answer in for_notebook("10")]
['Pipeline parallelism: the bubble', 'From the laptop to the cluster']
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NOTEBOOKS = {
    "00": "00_start_here",
    "01": "01_parallelism_basics",
    "02": "02_matmul_cpu_vs_gpu",
    "03": "03_vram_limits",
    "04": "04_templates_and_serverless",
    "05": "05_finetuning_economics",
    "06": "06_when_cpus_win",
    "07": "07_scaling_out",
    "08": "08_choose_your_hardware",
    "09": "09_where_the_time_goes",
    "10": "10_split_the_model",
    "11": "11_latency_under_load",
    "12": "12_cpu_and_gpu_together",
}
SERVED_7B = "Mistral-7B-v0.1"  # the 7B of notebooks 03 and 06: 4-bit weights fit a free T4
SERVED_7B_PRECISION = "int4"
SOURCED_4BIT_GPU_ENGINE = "transformers-gptq"  # a sourced 4-bit GPU engine for a GPU whose default has none
SMALL_JOB = "Llama-3.1-8B"
LAPTOP = "Apple M1 Pro"  # the catalog's laptop
SERVER_CPU = "AMD EPYC 9684X"


@dataclass(frozen=True)
class Answer:
    """One question, its short answer for the default setup, and the section that derives it."""

    question: str
    answer: str
    section: str


def slug(heading: str) -> str:
    """The anchor of a heading on the website (MyST's heading anchors).

    >>> slug("2 · Threads and Amdahl's law")
    '2--threads-and-amdahls-law'
    """
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _gb(n_bytes: float) -> str:
    from lab_utils.units import format_bytes

    return format_bytes(n_bytes)


def _fits_where(estimate) -> str:
    """The smallest catalog GPU holding ``estimate`` alone, or how many of the largest hold it
    (``memory.gpus_to_hold``, the count every face gives)."""
    from lab_utils import hardware, memory

    gpus = sorted(
        (s for s in hardware.catalog() if s.kind == "gpu" and s.memory_bytes), key=lambda s: s.memory_bytes
    )
    one = next((s for s in gpus if memory.fits(estimate.total_bytes, s)), None)
    if one is not None:
        return f"one {one.name} ({_gb(one.memory_bytes)})"
    largest = gpus[-1]
    return f"{memory.gpus_to_hold(estimate.model, estimate, largest)} x {largest.name}"


def _q00():
    from lab_utils import basics, roofline

    flops = roofline.matmul_flops(1024, 1024, 1024)
    _, h100_fp32_flops = basics.peak_flops("H100 SXM", "fp32")
    return (
        Answer(
            "How much work is a 1,024 x 1,024 matrix product, and how fast could it be?",
            f"{flops:.3g} FLOPs; at an H100's fp32 peak (vendor specification) "
            f"{flops / h100_fp32_flops * 1e6:.0f} µs at best. Your CPU: measured in the section.",
            "The loop: predict, measure, explain",
        ),
        Answer(
            "Can I follow the course without a GPU?",
            "Yes: every notebook runs on a CPU; GPU sections show vendor figures or figures measured "
            "elsewhere, labelled as such.",
            "With a GPU or without",
        ),
    )


def _q01():
    from lab_utils import hardware, parallel

    h100 = hardware.get("H100 SXM")
    return (
        Answer(
            "How much can 8 threads speed up a job that is 90% parallel?",
            f"{parallel.amdahl_speedup(0.9, 8):.1f}x (Amdahl), and never more than "
            f"{parallel.amdahl_limit(0.9):.0f}x however many threads.",
            "2 · Threads and Amdahl's law",
        ),
        Answer(
            "Why can thousands of slow lanes beat a few fast cores?",
            f"An H100 has {h100.fp32_lanes:,} fp32 lanes (vendor specification): for wide, regular work "
            "the count wins; for a sequential dependency it cannot help.",
            "4 · Anatomy: cores, lanes, clocks and bandwidth",
        ),
    )


def _q02():
    from lab_utils import hardware, roofline

    t4 = roofline.roof_of("T4")
    ridge = hardware.get("T4").ridge_point(t4.dtype)
    return (
        Answer(
            "How fast can a matrix product go on a T4?",
            f"At most {t4.peak_flops / 1e12:.0f} TFLOP/s ({t4.dtype}, vendor specification), and only "
            f"above {ridge:.0f} FLOP per byte; below it the {t4.bandwidth_bytes_per_s / 1e9:.0f} GB/s "
            "memory sets the pace.",
            "The roofline of your machine",
        ),
        Answer(
            "Is generating one token limited by compute or by memory?",
            f"By memory: a matrix-vector product in 16 bits does "
            f"{roofline.matmul_intensity(1, 4096, 4096, 2):.1f} FLOP per byte, far below every "
            "catalog device's ridge point.",
            "Count: FLOPs, bytes and arithmetic intensity",
        ),
    )


def _q03():
    from lab_utils import memory

    lora = memory.job_estimate(SMALL_JOB, "lora")
    full = memory.job_estimate(SMALL_JOB, "full")
    t4 = memory.longest_seq_len(SERVED_7B, "T4", precision=SERVED_7B_PRECISION)
    return (
        Answer(
            f"Which GPU does {SMALL_JOB} need for LoRA and for a full fine-tune?",
            f"LoRA {_gb(lora.total_bytes)}: {_fits_where(lora)}; full {_gb(full.total_bytes)}: "
            f"{_fits_where(full)} (at {lora.seq_len:,} tokens, the course's defaults).",
            "Scale up: will a real model fit?",
        ),
        Answer(
            f"Can a free Colab T4 serve a 7B model ({SERVED_7B}, 4-bit), and how fast?",
            f"It fits, with up to {t4.seq_len:,} tokens of context (limited by {t4.limited_by}). "
            f"{serve_7b('T4')} {COLAB_CANNOT}",
            "Calculator: will my job fit?",
        ),
    )


def _q04():
    from lab_utils import memory, serverless

    start = serverless.cold_start(memory.weight_bytes(8e9, "bf16"))
    parts = ", ".join(f"{label} {seconds:.0f} s" for label, seconds in start.parts)
    return (
        Answer(
            "How long does a serverless GPU worker take to start for an 8B model?",
            f"About {start.total_s:.0f} s for a plain start ({parts}; assumptions with sources).",
            "Pod or serverless? Putting a price on traffic",
        ),
        Answer(
            "Pod or serverless?",
            "Serverless for sparse or bursty traffic, a pod once requests come often enough to keep "
            "a worker busy: the break-even is computed in the section for your own traffic.",
            "Which to pick",
        ),
    )


def _q05():
    from lab_utils import advisor

    best = _cheapest(advisor.fine_tune(SMALL_JOB, 100e6, method="lora"))
    return (
        Answer(
            f"What does a LoRA fine-tune of {SMALL_JOB} on 100M tokens cost?",
            f"About ${best.cost_per_job_usd:,.2f} and {best.hours:.1f} h on {best.n_devices} x {best.device} "
            "(the cheapest fitting GPU option at the course's MFU assumption).",
            "3 · Extrapolate: hours and dollars for 7B to 70B models",
        ),
        Answer(
            "When does self-hosting beat a paid API?",
            "When the monthly token volume keeps a GPU busy: the section computes the break-even "
            "volume from dated prices, the fine-tune included.",
            "4 · Serve it: prefill, decode, batching and the KV cache",
        ),
    )


def _q06():
    return (
        Answer(
            "Can a laptop serve a 7B model (4-bit), and how fast?",
            f"{serve_7b(LAPTOP)} {serve_7b(SERVER_CPU)} Your own CPU: the section measures its "
            "bandwidth and bounds it the same way.",
            "6. A 4-bit 7B model on a CPU: the bandwidth bound",
        ),
        Answer(
            "Which AI jobs run as well or cheaper on a CPU?",
            "Data work, sparse lookups in large embedding tables, small models at batch 1, and "
            "routing that keeps only the hard requests for a GPU.",
            "3. Batch-1 latency: when does the GPU overtake?",
        ),
    )


def _q07():
    from lab_utils import comms, interconnects, llms, memory

    gradient_bytes = llms.get(SMALL_JOB).n_params * 2
    links = interconnects.get("H100 SXM")
    seconds = comms.ring_all_reduce_seconds(
        gradient_bytes, 8, bandwidth_bytes_per_s=links.nvlink_bytes_per_s_each_way
    )
    zero3 = memory.zero3_bytes_per_gpu(SMALL_JOB, 8)
    return (
        Answer(
            f"How long does an all-reduce of {SMALL_JOB}'s bf16 gradients take on 8 GPUs?",
            f"{seconds * 1e3:.0f} ms over the H100's NVLink {links.nvlink_generation} (ring formula, "
            f"{links.source}, {links.source_date}); the network "
            "between servers is many times slower.",
            "Communication: what an all-reduce costs",
        ),
        Answer(
            f"How much training state does each of 8 GPUs hold for {SMALL_JOB} with ZeRO-3?",
            f"{_gb(zero3)} per GPU, an eighth of the whole.",
            "Memory across ranks: ZeRO",
        ),
    )


def _q08():
    from lab_utils import advisor

    best = _cheapest(advisor.fine_tune(SMALL_JOB, 100e6, method="lora"))
    return (
        Answer(
            f"Which hardware for a LoRA fine-tune of {SMALL_JOB} on 100M tokens?",
            f"{best.n_devices} x {best.device}: ${best.cost_per_job_usd:,.2f}, {best.hours:.1f} h (bound: "
            f"{best.bound}); the ranking shows every option and why the others lose.",
            "2 · Job 1: a LoRA fine-tune of an 8B model",
        ),
        Answer(
            "Serve a chatbot on my own GPU, serverless, or buy tokens?",
            "At low traffic buying the same open model per token wins; at high traffic a batching "
            "GPU comes close: the section ranks both traffic levels.",
            "3 · Job 2: serving a chatbot at two traffic levels",
        ),
    )


def _q09():
    from lab_utils import basics

    bf16, fp32 = (basics.peak_flops("A100 80GB SXM", dtype)[1] for dtype in ("bf16", "fp32"))
    return (
        Answer(
            "My training step is slow: where do I look first?",
            "The profile: group the operators into matrix products, element-wise work, optimizer and "
            "data, and fix the largest share first.",
            "1 · Profile one training step",
        ),
        Answer(
            "How much can bf16 speed up training?",
            f"On an A100, {bf16 / fp32:.0f}x the fp32 peak in the "
            "matrix products (vendor specification); on most CPUs little or nothing.",
            "2 · Mixed precision: bf16, fp16 and TF32",
        ),
    )


def _q10():
    from lab_utils import splits
    from lab_utils.units import format_seconds

    microbatches = next(m for m in range(1, 1000) if splits.bubble_fraction(4, m) < 0.10)
    plan = splits.cluster_plan("llama-3.1-70b", "h100", 8, 4)
    fitting = [row for row in plan.rows if row.fits]
    least = min(fitting, key=lambda row: row.communication_s) if fitting else None
    where = (
        f"{least.layout}, {format_seconds(least.communication_s)} of communication a step"
        if least
        else "no layout fits"
    )
    return (
        Answer(
            "How many micro-batches keep a 4-stage pipeline's idle share under 10%?",
            f"{microbatches} (bubble {splits.bubble_fraction(4, microbatches):.1%}).",
            "Pipeline parallelism: the bubble",
        ),
        Answer(
            "How to split a full fine-tune of Llama-3.1-70B over 4 nodes of 8 H100s?",
            f"Tensor parallelism inside a node, FSDP or a pipeline across; least traffic time: {where}.",
            "From the laptop to the cluster",
        ),
    )


def _q11():
    from lab_utils import assumptions, replica, serving

    job = dict(device="H100 SXM", prompt_len=1000, output_len=200)  # notebook 11's job
    room = serving.max_batch(
        SMALL_JOB, device=job["device"], context_len=job["prompt_len"] + job["output_len"]
    )
    steady = serving.estimate(SMALL_JOB, batch=room, **job)
    knee = steady.requests_per_s
    half = replica.at_rate(
        SMALL_JOB, rate_per_s=knee / 2, n_requests=assumptions.value("replica_requests"), **job
    )
    return (
        Answer(
            f"How many requests per second can one H100 serve with {SMALL_JOB}?",
            f"About {knee:.1f} at {job['prompt_len']:,} tokens in and {job['output_len']} out, kept full "
            f"(steady-state estimate, engine {steady.engine}); past it the queue grows.",
            "The knee: how many requests per second one replica serves",
        ),
        Answer(
            "What will users wait at half that rate?",
            f"Simulated: time to first token {half.ttft.p50 * 1e3:.0f} ms at the median, "
            f"{half.ttft.p99 * 1e3:.0f} ms at p99; {half.tpot.p50 * 1e3:.1f} ms per output token.",
            "Simulate: the replica step by step",
        ),
    )


def _q12():
    from lab_utils import llms, offload

    gpu, host, model, precision = "RTX 4090", "AMD Ryzen 9 7950X", "Llama-3.1-70B", "q4_k_m"  # notebook 12's
    n_layers = len(llms.get(model).layers)
    placements = [
        offload.estimate(model, gpu=gpu, host=host, gpu_layers=n, precision=precision, context_len=4096)
        for n in range(n_layers + 1)
    ]
    most = max((p for p in placements if p.fits), key=lambda p: p.gpu_layers)
    return (
        Answer(
            f"Can a 24 GB {gpu} run {model} ({precision}) with the rest in a desktop's RAM?",
            f"Yes: {most.gpu_layers} of its {n_layers} blocks fit on the card, the rest in RAM, at most "
            f"{most.decode_bound_tokens_per_s:.1f} tokens/s (bound, vendor specifications).",
            "1 · Layers on the GPU, layers in RAM: the cliff",
        ),
        Answer(
            "Why do mixtures of experts run well with their experts in RAM?",
            "A token reads only the experts it is routed to: the host reads a small share of the "
            "weights per token while attention and the KV cache stay on the GPU.",
            "3 · A mixture of experts: the experts in RAM",
        ),
    )


def _cheapest(advice):
    """The cheapest option that fits and has a price."""
    priced = (o for o in advice.options if o.fits and o.cost_per_job_usd is not None)
    return min(priced, key=lambda o: o.cost_per_job_usd)


_QUESTIONS = {
    "00": _q00,
    "01": _q01,
    "02": _q02,
    "03": _q03,
    "04": _q04,
    "05": _q05,
    "06": _q06,
    "07": _q07,
    "08": _q08,
    "09": _q09,
    "10": _q10,
    "11": _q11,
    "12": _q12,
}


def for_notebook(number: str) -> tuple[Answer, ...]:
    """The questions notebook ``number`` ("00" ... "12") answers, each answered now."""
    if number not in _QUESTIONS:
        raise ValueError(f"number={number!r}: a course notebook, one of {', '.join(_QUESTIONS)}")
    return _QUESTIONS[number]()


def markdown(number: str, page: str = "") -> str:
    """The answers of notebook ``number`` as a Markdown list, each linked to its section (on
    ``page``, e.g. "../notebooks/03_vram_limits.ipynb"; "" for the notebook itself)."""
    lines = [
        f"- **{a.question}** {a.answer} ([{a.section}]({page}#{slug(a.section)}))"
        for a in for_notebook(number)
    ]
    return "\n".join(lines).replace("$", "\\$")  # dollar amounts, not math


def _engine_for_4bit(spec) -> str | None:
    """The engine whose published 4-bit figure stands for ``spec``: its default engine when that
    has one, else on a GPU the catalog's sourced 4-bit GPU engine; None on a CPU without one."""
    from lab_utils import engines

    default = engines.get(device=spec)
    if 4 in default.decode_efficiency and default.name != "bound":
        return default.name
    return SOURCED_4BIT_GPU_ENGINE if spec.kind == "gpu" else None


def serve_7b(device: str) -> str:
    """One line: can ``device`` (a catalog name) serve the 4-bit 7B, and how fast for one
    conversation: the bandwidth bound beside an engine's published figure (:func:`_engine_for_4bit`)."""
    from lab_utils import assumptions, engines, hardware, memory, serving

    spec = hardware.get(device)
    estimate = memory.job_estimate(SERVED_7B, "inference", SERVED_7B_PRECISION)
    if spec.kind == "gpu" and not memory.fits(estimate.total_bytes, spec):
        return (
            f"{spec.name}: {SERVED_7B} in {SERVED_7B_PRECISION} does not fit ({_gb(estimate.total_bytes)})."
        )
    common = dict(
        device=spec,
        prompt_len=assumptions.value("input_tokens"),
        output_len=assumptions.value("output_tokens"),
        precision=SERVED_7B_PRECISION,
    )
    bound = serving.estimate(SERVED_7B, engine="bound", **common)
    line = (
        f"{spec.name}: {SERVED_7B} with 4-bit weights, one conversation, at most "
        f"{1 / bound.tpot_s:.0f} tokens/s (the memory-bandwidth bound, vendor specification)"
    )
    engine = _engine_for_4bit(spec)
    if engine is None:
        return line + "; no engine's CPU figure is published in the course's sources."
    profile = engines.get(engine)
    served = serving.estimate(SERVED_7B, engine=profile.name, **common)
    source = profile.source_for("decode_efficiency[4]")
    return line + (
        f"; {profile.name} about {1 / served.tpot_s:.0f} tokens/s ({source.source}, {source.source_date})."
    )


COLAB_CANNOT = (
    "Colab runs a notebook for you, not a server for others: it gives no public address, so it "
    "cannot host an endpoint, and a free runtime stops when idle. To serve users, rent a pod or a "
    "serverless endpoint (notebook 04)."
)
