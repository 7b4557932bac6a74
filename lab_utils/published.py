"""The course against the world: published measurements of real systems beside the course's
answer for the same setup.

Each record of ``lab_utils/data/published.toml`` names a measurement (title, publisher, date,
setup, the figure and its unit) and the *question* the course answers for that setup: one of
:data:`QUESTIONS`, computed here by calling the calculators (``hardware``, ``serving``,
``economics``, ``memory``), never typed in. A record says what the course's answer is:

- ``"bound"``: a roofline ceiling, so the measurement must not beat it, and it should not be
  looser than the file's ``bound_max_ratio`` (about 1.7x);
- ``"estimate"``: a best guess, which should land within ``estimate_max_ratio`` (1.5x) of the
  measurement either way.

``ratio`` is always "how optimistic the course is": course / measured for a throughput or a
size, measured / course for a time. A record the course cannot answer well yet carries
``expected_miss`` (why, and what would fix it); its test is an expected failure.

>>> row = compare(get("mamf-h100-sxm-bf16"))
>>> row.course_unit, round(row.ratio, 2), row.within
('FLOP/s', 1.24, True)
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from lab_utils import (
    advisor,
    assumptions,
    basics,
    catalogs,
    checks,
    economics,
    hardware,
    llms,
    lookup,
    memory,
    offload,
    prices,
    replica,
    serverless,
    serving,
)

__all__ = [
    "COURSE_KINDS",
    "QUESTIONS",
    "Comparison",
    "Measurement",
    "bands",
    "cold_start_s",
    "compare",
    "decode_tokens_per_s",
    "distinct_figures",
    "get",
    "longest_sequence_tokens",
    "matmul_flops",
    "measurements",
    "offload_decode_tokens_per_s",
    "offload_prefill_tokens_per_s",
    "offload_training_flops_per_s",
    "prefill_tokens_per_s",
    "recommender_training_s",
    "replica_tpot_p50_s",
    "replica_ttft_p50_s",
    "request_output_tokens_per_s",
    "request_latency_s",
    "request_prompt_tokens_per_s",
    "restored_start_s",
    "samples_per_s",
    "server_output_tokens_per_s",
    "server_requests_per_s",
    "serving_joules_per_output_token",
    "table",
    "training_tokens_per_s",
    "zero_offload_max_params",
    "weights_bytes",
]

_DATA_FILE = "published.toml"

COURSE_KINDS = ("bound", "estimate")


# --- the questions: each answers in the unit of the measurements that ask it ----------------


def matmul_flops(*, device, dtype):
    """The dense peak of ``device`` in ``dtype`` (vendor specification, ``basics.peak_flops``):
    what no matmul beats."""
    return basics.peak_flops(hardware.as_spec(device), dtype)[1]


def samples_per_s(*, device, dtype, flops_per_sample, n_sockets=1):
    """Samples/s at most on ``n_sockets`` of ``device``: sockets x peak[dtype] / FLOPs per sample
    (compute bound: a batch of images or sequences through a network)."""
    flops_per_sample = checks.number("flops_per_sample", flops_per_sample)
    n_sockets = checks.count("n_sockets", n_sockets)
    return n_sockets * matmul_flops(device=device, dtype=dtype) / flops_per_sample


def decode_tokens_per_s(*, model, device, context_len, **options):
    """Tokens/s of one sequence decoding alone: 1 / :func:`serving.decode_step_s` at batch 1;
    ``options`` (weight_bytes_per_param, ...) go to it as they are."""
    return 1.0 / serving.decode_step_s(model, device=device, context_len=context_len, **options)


def _full_server(model, device, prompt_len, output_len, n_devices, engine, options):
    """:func:`serving.estimate` of a server kept full: continuous batching at the largest batch
    whose KV caches fit (:func:`serving.max_batch`), on ``n_devices`` of ``device`` as one replica."""
    spec = serving.replica(device, n_devices)
    batch = serving.max_batch(model, device=spec, context_len=prompt_len + output_len, **options)
    if batch < 1:
        raise ValueError(f"model={llms.as_config(model).name!r} does not fit {spec.name}")
    return serving.estimate(
        model,
        device=spec,
        prompt_len=prompt_len,
        output_len=output_len,
        batch=batch,
        usd_per_hour=0.0,
        engine=engine,
        **options,
    )


def server_output_tokens_per_s(
    *, model, device, prompt_len, output_len, n_devices=1, engine="bound", **options
):
    """Generated tokens/s of a server kept full (:func:`_full_server`); ``engine`` (default
    "bound": the roofline itself) turns it into an engine's estimate; ``options``
    (weight_bytes_per_param, kv_bytes_per_value, ...) go to both as they are."""
    return _full_server(model, device, prompt_len, output_len, n_devices, engine, options).output_tokens_per_s


def server_requests_per_s(*, model, device, prompt_len, output_len, n_devices=1, engine="bound", **options):
    """Requests/s of the same full server as :func:`server_output_tokens_per_s` (a load
    generator's "maximum throughput" in queries per second)."""
    return _full_server(model, device, prompt_len, output_len, n_devices, engine, options).requests_per_s


def request_output_tokens_per_s(*, model, device, prompt_len, output_len, **options):
    """Generated tokens/s of one request alone, its prefill included: :func:`serving.estimate` at
    batch 1; ``options`` (engine, weight_bytes_per_param, ...) go to it as they are."""
    return serving.estimate(
        model, device=device, prompt_len=prompt_len, output_len=output_len, usd_per_hour=0.0, **options
    ).output_tokens_per_s


def request_latency_s(*, model, device, prompt_len, output_len, n_devices=1, **options):
    """Seconds one request takes alone, from sending its prompt to its last token (one stream,
    nothing queued): :func:`serving.estimate`'s ``latency_s`` at batch 1 on ``n_devices`` of
    ``device`` as one replica; ``options`` (engine, precision, ...) go to it as they are."""
    return serving.estimate(
        model,
        device=serving.replica(device, n_devices),
        prompt_len=prompt_len,
        output_len=output_len,
        usd_per_hour=0.0,
        **options,
    ).latency_s


def request_prompt_tokens_per_s(*, model, device, prompt_len, **options):
    """Prompt tokens/s of one request alone: ``prompt_len`` / :func:`serving.estimate`'s time to
    first token at batch 1; ``options`` (engine, ...) go to it as they are."""
    return (
        prompt_len
        / serving.estimate(
            model, device=device, prompt_len=prompt_len, output_len=1, usd_per_hour=0.0, **options
        ).ttft_s
    )


@functools.lru_cache(maxsize=32)
def _closed_loop(model, device, n_devices, prompt_len, output_len, concurrency, options):
    return replica.at_concurrency(
        model,
        device=device,
        n_devices=n_devices,
        concurrency=concurrency,
        prompt_len=prompt_len,
        output_len=output_len,
        **dict(options),
    )


def replica_ttft_p50_s(*, model, device, prompt_len, output_len, concurrency, n_devices=1, **options):
    """Median time to first token of requests of fixed lengths with ``concurrency`` in flight
    (:func:`replica.at_concurrency`: a closed loop, the ``client_requests`` assumption's requests
    per client) on one replica of ``n_devices`` x
    ``device``: :func:`replica.simulate`; ``options`` (engine, precision, ...) go to it as they are."""
    key = (model, device, n_devices, prompt_len, output_len, concurrency, tuple(sorted(options.items())))
    return _closed_loop(*key).ttft.p50


def replica_tpot_p50_s(*, model, device, prompt_len, output_len, concurrency, n_devices=1, **options):
    """Median time per output token of the same closed loop as :func:`replica_ttft_p50_s`."""
    key = (model, device, n_devices, prompt_len, output_len, concurrency, tuple(sorted(options.items())))
    return _closed_loop(*key).tpot.p50


def training_tokens_per_s(*, model, device, method="full", dtype="bf16", mfu=None):
    """Training tokens/s per device: peak[dtype] x MFU / training FLOPs per token
    (:func:`economics.training_flops`, :func:`economics.training_hours`); ``mfu`` None is the
    ``mfu`` assumption."""
    n_params = llms.as_config(model).params_per_token  # compute counts the active parameters
    mfu = assumptions.resolve(mfu=mfu)[0]["mfu"]
    tokens = 1e9
    hours = economics.training_hours(
        economics.training_flops(n_params, tokens, method),
        peak_flops=matmul_flops(device=device, dtype=dtype),
        mfu=mfu,
    )
    return tokens / (hours * prices.SECONDS_PER_HOUR)


def recommender_training_s(
    *,
    device,
    dense_params,
    n_examples,
    embedding_params,
    lookups_per_example,
    embedding_dim,
    n_sockets=1,
    **options,
):
    """Seconds to train a recommender on ``n_sockets`` of the CPU ``device``: the advisor's lower
    bound for one (:func:`advisor.train`: the dense part's FLOPs at ``cpu_mfu`` of the peak, the
    embedding rows' gathers at ``gather_efficiency`` of the bandwidth) over ``n_sockets`` (ideal
    scaling: the advisor has no two-socket option); ``options`` go to it as they are."""
    name = hardware.as_spec(device).name
    advice = advisor.train(
        dense_params,
        n_examples,
        embedding_params=embedding_params,
        lookups_per_example=lookups_per_example,
        embedding_dim=embedding_dim,
        **options,
    )
    return advice.option(name).hours * prices.SECONDS_PER_HOUR / checks.count("n_sockets", n_sockets)


def longest_sequence_tokens(*, model, device, method, batch=1, **options):
    """The longest sequence (tokens) whose training job fits ``device``:
    :func:`memory.longest_seq_len` (0 when none fits); ``options`` (lora_rank, lora_targets,
    loss_impl, ...) go to :func:`memory.job_estimate` as they are."""
    return memory.longest_seq_len(model, device, method=method, batch=batch, **options).seq_len


def prefill_tokens_per_s(*, model, device, prompt_len, **options):
    """Prompt tokens/s of one prompt of ``prompt_len`` tokens: ``prompt_len`` /
    :func:`serving.prefill_s` (compute bound); ``options`` go to it as they are."""
    return prompt_len / serving.prefill_s(model, device=device, prompt_len=prompt_len, **options)


def weights_bytes(*, model, weight_bytes_per_param=None):
    """Bytes of ``model``'s weights: as its checkpoint publishes them
    (``memory.checkpoint_weight_bytes``: MXFP4 experts beside bf16, block FP8, ...), or every
    parameter at ``weight_bytes_per_param`` (a GGUF format's average, e.g. Q8_0's 34 bytes per
    32 weights)."""
    if weight_bytes_per_param is None:
        return memory.checkpoint_weight_bytes(model)
    return llms.as_config(model).n_params * checks.number("weight_bytes_per_param", weight_bytes_per_param)


def cold_start_s(*, weight_bytes, **options):
    """Seconds of a serverless worker's cold start: :func:`serverless.cold_start` with its
    assumptions (image pull, container start, CUDA initialisation, weight load); ``options`` go
    to it as they are."""
    return serverless.cold_start(weight_bytes, **options).total_s


def serving_joules_per_output_token(*, model, device, prompt_len, output_len, batch, **options):
    """Joules per generated token of ``device`` serving ``batch`` requests at once:
    :func:`serving.estimate`'s ``joules_per_output_token`` (the device's power from its TDP, the
    device's default engine applied to the bound); ``options`` go to it as they are."""
    return serving.estimate(
        model,
        device=device,
        prompt_len=prompt_len,
        output_len=output_len,
        batch=batch,
        usd_per_hour=0.0,
        **options,
    ).joules_per_output_token


def restored_start_s(*, weight_bytes, **options):
    """Seconds of a worker brought back from a snapshot (Runpod's FlashBoot):
    :func:`serverless.cold_start`'s ``restore_s``; ``options`` go to it as they are."""
    return serverless.cold_start(weight_bytes, **options).restore_s


def offload_decode_tokens_per_s(*, model, gpu, host, engine="bound", **placement):
    """Tokens/s of one sequence decoding ``model`` split between ``gpu`` and ``host``:
    :func:`offload.estimate`'s ``decode_tokens_per_s`` (``engine`` "bound": the bound itself);
    ``placement`` (gpu_layers, cpu_moe_layers, experts_on_host, stream_bytes, precision, ...)
    goes to it as it is."""
    return offload.estimate(model, gpu=gpu, host=host, engine=engine, **placement).decode_tokens_per_s


def offload_prefill_tokens_per_s(*, model, gpu, host, engine="bound", **placement):
    """Prompt tokens/s of ``model`` split between ``gpu`` and ``host``: :func:`offload.estimate`'s
    ``prefill_tokens_per_s`` (the host's weights copied to the GPU or computed on the host,
    whichever is faster)."""
    return offload.estimate(
        _model(model), gpu=gpu, host=host, engine=engine, **placement
    ).prefill_tokens_per_s


def _model(model):
    """A catalog name as it is; a mapping as a config.json's keys (``llms.from_hf_config``)."""
    return llms.from_hf_config(dict(model)) if isinstance(model, dict) else model


def zero_offload_max_params(*, device, precision="mixed"):
    """The most parameters one ``device`` trains with ZeRO-Offload (``memory.job_estimate``'s
    offload "optimizer"): the memory left beside the CUDA context over the 16-bit weights the
    GPU keeps per parameter (``memory.training_state_bytes``); activations left out, so a bound."""
    return memory.usable_bytes(device) / memory.training_state_bytes(1.0, precision=precision).params_bytes


def offload_training_flops_per_s(*, model, gpu, host, offload, batch, seq_len, recompute="full", mfu=None):
    """Model FLOP/s one ``gpu`` sustains training ``model`` (a name, or a config.json's keys)
    with DeepSpeed's ``offload`` to ``host``: :func:`economics.fine_tune_estimate`'s FLOPs over its
    time, the GPU's compute at ``mfu`` (default its assumption) plus the exposed PCIe traffic and
    the CPU's Adam step of each iteration of ``batch`` sequences of ``seq_len`` tokens."""
    fine_tune = economics.fine_tune_estimate(
        model,
        1e9,
        method="full",
        gpu=gpu,
        offload=offload,
        host=host,
        batch=batch,
        seq_len=seq_len,
        recompute=recompute,
        mfu=mfu,
        usd_per_gpu_hour=0.0,
    )
    return fine_tune.flops / (fine_tune.hours * prices.SECONDS_PER_HOUR)


QUESTIONS = {
    "matmul_flops": (matmul_flops, "FLOP/s", "more"),
    "samples_per_s": (samples_per_s, "samples/s", "more"),
    "decode_tokens_per_s": (decode_tokens_per_s, "tokens/s", "more"),
    "server_output_tokens_per_s": (server_output_tokens_per_s, "tokens/s", "more"),
    "server_requests_per_s": (server_requests_per_s, "requests/s", "more"),
    "prefill_tokens_per_s": (prefill_tokens_per_s, "tokens/s", "more"),
    "request_output_tokens_per_s": (request_output_tokens_per_s, "tokens/s", "more"),
    "request_prompt_tokens_per_s": (request_prompt_tokens_per_s, "tokens/s", "more"),
    "request_latency_s": (request_latency_s, "s", "less"),
    "training_tokens_per_s": (training_tokens_per_s, "tokens/s", "more"),
    "recommender_training_s": (recommender_training_s, "s", "less"),
    "longest_sequence_tokens": (longest_sequence_tokens, "tokens", "more"),
    "weights_bytes": (weights_bytes, "bytes", "more"),
    "cold_start_s": (cold_start_s, "s", "less"),
    "restored_start_s": (restored_start_s, "s", "less"),
    "serving_joules_per_output_token": (serving_joules_per_output_token, "J/token", "less"),
    "offload_decode_tokens_per_s": (offload_decode_tokens_per_s, "tokens/s", "more"),
    "offload_prefill_tokens_per_s": (offload_prefill_tokens_per_s, "tokens/s", "more"),
    "zero_offload_max_params": (zero_offload_max_params, "parameters", "more"),
    "offload_training_flops_per_s": (offload_training_flops_per_s, "FLOP/s", "more"),
    "replica_ttft_p50_s": (replica_ttft_p50_s, "s", "less"),
    "replica_tpot_p50_s": (replica_tpot_p50_s, "s", "less"),
}
"""name -> (function, the unit it answers in, "more" or "less" is better)."""


# --- the records ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Measurement:
    """One published measurement: ``name`` (an id), ``title``, ``source`` (publisher),
    ``source_date`` (YYYY-MM), ``url``, ``cite`` (its key in book/references.bib), ``setup``,
    ``area`` (compute, inference, training, memory, cold start), ``figure`` in ``unit``,
    ``question`` (a key of :data:`QUESTIONS`) with its ``inputs``, ``course`` ("bound" or
    "estimate"), ``expected_miss`` (None, or why the course misses it for now), ``note`` and
    ``measured`` (False for a figure reported without being timed, e.g. a recollection)."""

    name: str
    title: str
    source: str
    source_date: str
    url: str
    cite: str
    setup: str
    area: str
    device_kind: str
    figure: float
    unit: str
    question: str
    inputs: tuple[tuple[str, object], ...]
    course: str
    expected_miss: str | None = None
    note: str | None = None
    measured: bool = True


@dataclass(frozen=True)
class Comparison:
    """A measurement beside the course's answer: ``course_value`` (in ``course_unit``, the
    measurement's unit), ``ratio`` (how optimistic the course is, >= 1 when it promises more),
    ``band`` (low, high) the ratio must stay in, and ``within``."""

    measurement: Measurement
    course_value: float
    course_unit: str
    ratio: float
    band: tuple[float, float]

    @property
    def within(self) -> bool:
        low, high = self.band
        return low <= self.ratio <= high


_STR_FIELDS = ("title", "url", "cite", "setup", "area", "device_kind", "unit", "question", "course")
_AREAS = ("compute", "inference", "training", "memory", "cold start", "energy")


def _measurement(record: dict, origin: str) -> Measurement:
    where = f"{origin}: [[measurement]] {record['name']!r}"
    missing = [key for key in _STR_FIELDS + ("figure", "inputs") if key not in record]
    if missing:
        raise ValueError(f"{where} lacks {', '.join(missing)}")
    unknown = (
        set(record)
        - set(_STR_FIELDS)
        - {"name", "source", "source_date", "figure", "inputs", "expected_miss", "note", "measured"}
    )
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    if record["question"] not in QUESTIONS:
        raise ValueError(f"{where}: question must be one of {tuple(QUESTIONS)}, got {record['question']!r}")
    if record["course"] not in COURSE_KINDS:
        raise ValueError(f"{where}: course must be one of {COURSE_KINDS}, got {record['course']!r}")
    if record["area"] not in _AREAS:
        raise ValueError(f"{where}: area must be one of {_AREAS}, got {record['area']!r}")
    if record["device_kind"] not in hardware.KINDS:
        raise ValueError(
            f"{where}: device_kind must be one of {hardware.KINDS}, got {record['device_kind']!r}"
        )
    if record["unit"] != QUESTIONS[record["question"]][1]:
        raise ValueError(
            f"{where}: unit {record['unit']!r} is not the unit of question {record['question']!r} "
            f"({QUESTIONS[record['question']][1]!r})"
        )
    if not isinstance(record.get("measured", True), bool):
        raise ValueError(f"{where}: measured must be true or false, got {record['measured']!r}")
    figure = checks.number(f"{where}: figure", record["figure"])
    fields = {key: record[key] for key in _STR_FIELDS + ("name", "source", "source_date")}
    return Measurement(
        **fields,
        figure=figure,
        inputs=tuple(record["inputs"].items()),
        expected_miss=record.get("expected_miss"),
        note=record.get("note"),
        measured=record.get("measured", True),
    )


@functools.cache
def _load() -> tuple[tuple[Measurement, ...], dict]:
    origin = f"lab_utils/data/{_DATA_FILE}"
    records = catalogs.parse(catalogs.text(_DATA_FILE), "measurement", origin)
    found = tuple(_measurement(record, origin) for record in records)
    return found, catalogs.index(found, origin)


def measurements(area: str | None = None) -> tuple[Measurement, ...]:
    """Every published measurement in file order; ``area`` filters (compute, inference, ...)."""
    found, _ = _load()
    if area is None:
        return found
    checks.choice("area", area, _AREAS)
    return tuple(m for m in found if m.area == area)


def get(name: str) -> Measurement:
    """One measurement by its ``name`` (id)."""
    found, index = _load()
    return lookup.find(name, index, "published measurements", [m.name for m in found])


def bands() -> dict[str, float]:
    """How far the course may be from a measurement: {"bound": the loosest a bound may be,
    "estimate": the most an estimate may miss by, either way}, from the data file."""
    data = catalogs.read(_DATA_FILE)
    return {"bound": float(data["bound_max_ratio"]), "estimate": float(data["estimate_max_ratio"])}


def compare(measurement: Measurement) -> Comparison:
    """The course's answer for ``measurement``'s setup, computed now, with the ratio and band."""
    function, unit, better = QUESTIONS[measurement.question]
    value = function(**dict(measurement.inputs))
    ratio = value / measurement.figure if better == "more" else measurement.figure / value
    limit = bands()[measurement.course]
    band = (1.0, limit) if measurement.course == "bound" else (1.0 / limit, limit)
    if not math.isfinite(ratio):
        raise ValueError(f"{measurement.name}: the course's answer {value!r} gives no ratio")
    return Comparison(measurement=measurement, course_value=value, course_unit=unit, ratio=ratio, band=band)


def table() -> tuple[Comparison, ...]:
    """:func:`compare` for every measurement, in file order."""
    return tuple(compare(m) for m in measurements())


def distinct_figures(rows) -> tuple[tuple[Comparison, ...], ...]:
    """The published figures behind ``rows`` (:class:`Comparison`), each once, in order: the
    rows that hold one figure of one source (the same figure, unit and setup as a bound and as
    an estimate through an engine profile) grouped together, so a headline counts each published
    figure once however many of the course's answers it is held against."""
    groups = {}
    for row in rows:
        m = row.measurement
        groups.setdefault((m.cite, m.setup, m.figure, m.unit), []).append(row)
    return tuple(tuple(group) for group in groups.values())
