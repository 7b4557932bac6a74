"""Time-boxed sweeps on one device: matrix-product throughput and memory bandwidth.

:func:`sweep` times square matrix products over sizes and dtypes, and a memory copy and a
triad over array sizes (on the CPU with all threads and the copy with one thread beside it),
each with ``timing.measure``; it starts no case that it predicts would overrun
its time budget, and returns a frozen :class:`BenchTable`. Notebook 02 calls it, and so will
``lab-utils bench``: nothing here assumes a notebook.

What is counted (``lab_utils.roofline``):

- an n x n product: 2n^3 FLOPs and 3n^2 elements moved (both operands read once, the result
  written once), the least traffic the product can have;
- a copy of an N-byte array: 2N bytes, N read + N written, as the STREAM benchmark counts
  (McCalpin). The extra read most CPUs make of the destination before writing it
  (write-allocate) is not counted, so the copy figure understates the traffic of the memory
  bus by up to a third;
- a triad ``a = b + s * c`` over N-byte arrays: 3N bytes (two read, one written), STREAM's
  triad.

One CPU core cannot keep a server's memory channels busy: the machine's bandwidth is what all
cores move together, so CPU copies and triads use every thread torch has, and the copy is also
measured with one thread to show the difference.

torch loads only when a sweep runs.
"""

from __future__ import annotations

import contextlib
import functools
import math
import time
from collections.abc import Callable, Iterable

from lab_utils import checks, machine, roofline, timing
from lab_utils.bench_cases import (  # the modules of one idea each, named here as one module
    _check_min_run_time,
    measure_copy,
    measure_matmul,
    measure_triad,
)
from lab_utils.bench_results import (
    _PROBE_COPY_BYTES,
    _PROBE_MAX_CALL_S,
    _PROBE_SIZE,
    _SAFETY_FACTOR,
    COPY_DTYPE,
    CPU_SIZES,
    GPU_SIZES,
    KINDS,
    MATMUL_DTYPES,
    TRIAD_SCALAR,
    BenchRow,
    BenchTable,
    Progress,
    Skipped,
    _torch_dtype,
)
from lab_utils.units import format_seconds

__all__ = [
    "COPY_DTYPE",
    "CPU_SIZES",
    "GPU_SIZES",
    "KINDS",
    "MATMUL_DTYPES",
    "BenchRow",
    "BenchTable",
    "Progress",
    "Skipped",
    "default_sizes",
    "measure_copy",
    "measure_matmul",
    "measure_triad",
    "sweep",
]


@contextlib.contextmanager
def _matmul_precision(dtype: str):
    """fp32 products in full fp32, tf32 ones with TF32; the setting is restored after, through
    whichever API is in use (torch 2.9+ ``torch.backends.cuda.matmul.fp32_precision`` once set,
    else ``torch.set_float32_matmul_precision``: mixing the two makes torch raise)."""
    import torch

    if dtype not in ("fp32", "tf32"):
        yield
        return
    matmul = torch.backends.cuda.matmul
    if getattr(matmul, "fp32_precision", "none") != "none":
        before = matmul.fp32_precision
        matmul.fp32_precision = "tf32" if dtype == "tf32" else "ieee"
        try:
            yield
        finally:
            matmul.fp32_precision = before
        return
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high" if dtype == "tf32" else "highest")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


def _bf16_supported(device) -> bool:
    """Whether ``device`` multiplies bf16 natively (not emulated in fp32 units, as on a T4)."""
    import torch

    try:
        return torch.cuda.is_bf16_supported(including_emulation=False)
    except TypeError:  # torch < 2.3 has no including_emulation
        return torch.cuda.get_device_capability(device)[0] >= 8


def _unsupported(dtype: str, device) -> str | None:
    """Why ``dtype`` cannot run on ``device``, or None."""
    import torch

    if dtype == "bf16" and device.type == "cuda" and not _bf16_supported(device):
        major, minor = torch.cuda.get_device_capability(device)
        return (
            f"bf16 runs emulated, without tensor cores, below compute capability 8.0; this GPU has "
            f"{major}.{minor} (use fp16)"
        )
    if dtype != "tf32":
        return None
    if device.type != "cuda":
        return "tf32 needs a CUDA GPU of compute capability 8.0 (Ampere) or newer"
    major, minor = torch.cuda.get_device_capability(device)
    if major < 8:
        return f"tf32 needs compute capability 8.0 or newer; this GPU has {major}.{minor}"
    return None


def _operands(kind: str, size: int, dtype: str, device):
    import torch

    if kind == "matmul":
        return (
            torch.randn(size, size, dtype=_torch_dtype(dtype), device=device),
            torch.randn(size, size, dtype=_torch_dtype(dtype), device=device),
        )
    # ones, not empty: the source pages must really exist, or reads cost no memory traffic
    out = torch.zeros(size, dtype=_torch_dtype(COPY_DTYPE), device=device)
    if kind == "copy":
        return (torch.ones_like(out), out)
    return (out, torch.ones_like(out), torch.ones_like(out))


def _call_seconds(kind: str, operands, device) -> float:
    """Seconds of one synchronized call: the fastest of up to three after a warm-up call (the
    fastest, so that one stall of a busy machine does not make a case look too long to run;
    fewer once the calls have taken ``_PROBE_MAX_CALL_S``)."""
    import torch

    if kind == "matmul":
        call = functools.partial(torch.matmul, *operands)
    elif kind == "copy":
        call = functools.partial(operands[1].copy_, operands[0])
    else:
        call = functools.partial(torch.add, operands[1], operands[2], alpha=TRIAD_SCALAR, out=operands[0])
    seconds = []
    while len(seconds) < 4 and (len(seconds) < 2 or sum(seconds[1:]) < _PROBE_MAX_CALL_S):
        machine.synchronize(device)
        start = time.perf_counter()
        call()
        machine.synchronize(device)
        seconds.append(time.perf_counter() - start)
    return min(seconds[1:])


def _work(kind: str, size: int) -> float:
    """FLOPs (matmul) or elements (copy): what one call's time grows with."""
    return roofline.matmul_flops(size, size, size) if kind == "matmul" else float(size)


def _check_sizes(name: str, values, minimum: int) -> tuple[int, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a sequence of ints, got {type(values).__name__} {values!r}")
    values = tuple(values)
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must hold ints, got {type(value).__name__} {value!r}")
        if value < minimum:
            raise ValueError(f"{name} holds {value!r}: each must be >= {minimum}")
    return tuple(sorted(set(values)))


def default_sizes(device) -> tuple[int, ...]:
    """The matrix sizes a sweep on ``device`` runs by default."""
    return CPU_SIZES if machine.as_device(device).type == "cpu" else GPU_SIZES


def sweep(
    *,
    sizes: Iterable[int] | None = None,
    dtypes: Iterable[str] = ("fp32",),
    copy_bytes: Iterable[int] = (256 * 2**20,),
    device=None,
    budget_s: float = 10.0,
    min_run_time: float = 0.1,
    progress: bool | Callable[[Progress], None] | None = None,
) -> BenchTable:
    """Measure copies and triads of each size in ``copy_bytes`` (bytes of one array), then
    n x n products for each dtype in ``dtypes`` and n in ``sizes`` (ascending; None:
    :data:`CPU_SIZES` on the CPU, :data:`GPU_SIZES` on a GPU), on ``device`` (None:
    ``machine.pick_device()``), within about ``budget_s`` seconds. On the CPU the copy is
    measured with all of torch's threads and then with one; the triad with all.

    The smallest product of each dtype runs first, so that a short budget on a busy machine
    still measures a compute point as well as the bandwidth ones; the table lists the cases in
    their usual order. Before each case the sweep predicts its cost from the last size of that kind
    and dtype (or from a small probe) and skips it, with the reason, unless twice that fits in what is left of
    the budget (one case can still overrun it when a size runs much slower than the last); a tf32
    case is skipped where the device has no TF32, a bf16 one where a GPU would only emulate bf16
    (below compute capability 8.0), and a case that raises a RuntimeError (out of
    memory, a dtype the device cannot multiply) is skipped with the error's first line.
    ``min_run_time`` goes to ``timing.measure``.
    ``progress``: None or False for silence, True to print one line per case, or a function
    called with a :class:`Progress` after each case.
    """
    device = machine.as_device(device)
    sizes = _check_sizes("sizes", default_sizes(device) if sizes is None else sizes, 1)
    copy_bytes = _check_sizes("copy_bytes", copy_bytes, 4)
    if isinstance(dtypes, str) or not isinstance(dtypes, Iterable):
        raise TypeError(f"dtypes must be a sequence of names from {MATMUL_DTYPES}, got {dtypes!r}")
    dtypes = tuple(dict.fromkeys(dtypes))
    unknown = [d for d in dtypes if d not in MATMUL_DTYPES]
    if unknown:
        raise ValueError(f"dtypes holds {unknown[0]!r}; allowed: {MATMUL_DTYPES}")
    budget_s = checks.number("budget_s", budget_s)
    min_run_time = _check_min_run_time(min_run_time)
    if progress is True:
        report = print
    elif progress is None or progress is False:
        report = None
    elif callable(progress):
        report = progress
    else:
        raise TypeError(f"progress must be None, True, False or a function of one Progress, got {progress!r}")

    cases = [case for nbytes in copy_bytes for case in _bandwidth_cases(nbytes // 4, device)]
    cases += [("matmul", n, dtype, None) for dtype in dtypes for n in sizes]
    outcomes: dict[int, BenchRow | Skipped] = {}
    seconds_per_work: dict[tuple, float] = {}
    start = time.perf_counter()

    for done, index in enumerate(_run_order(cases), start=1):
        kind, size, dtype, threads = cases[index]
        row, reason = None, _unsupported(dtype, device)
        if reason is None:
            with _matmul_precision(dtype):
                row, reason = _run_case(
                    cases[index],
                    device,
                    min_run_time,
                    seconds_per_work,
                    budget_s - (time.perf_counter() - start),
                )
        if row is not None:
            seconds_per_work[(kind, dtype, threads)] = row.median_s / _work(kind, size)
        outcomes[index] = row if row is not None else Skipped(kind, size, dtype, reason, threads)
        if report is not None:
            report(Progress(done, len(cases), kind, size, dtype, row, reason, time.perf_counter() - start))

    in_order = [outcomes[index] for index in sorted(outcomes)]
    rows = tuple(o for o in in_order if isinstance(o, BenchRow))
    skipped = tuple(o for o in in_order if isinstance(o, Skipped))
    return BenchTable(rows, skipped, str(device), float(budget_s), time.perf_counter() - start)


def _run_order(cases: list[tuple]) -> list[int]:
    """Indices of ``cases`` in the order the sweep runs them: the first (smallest) product of
    each dtype, then every other case in order, so larger sizes still follow smaller ones."""
    first_products = {}
    for index, (kind, _size, dtype, _threads) in enumerate(cases):
        if kind == "matmul":
            first_products.setdefault(dtype, index)
    firsts = list(first_products.values())
    return firsts + [index for index in range(len(cases)) if index not in firsts]


def _bandwidth_cases(size: int, device) -> list[tuple]:
    """(kind, elements, dtype, threads) of the bandwidth cases for arrays of ``size`` elements:
    on the CPU a copy with all threads, a copy with one (when torch has more) and a triad with all."""
    import torch

    if device.type != "cpu":
        return [("copy", size, COPY_DTYPE, None), ("triad", size, COPY_DTYPE, None)]
    everyone = torch.get_num_threads()
    cases = [("copy", size, COPY_DTYPE, everyone)]
    if everyone > 1:
        cases.append(("copy", size, COPY_DTYPE, 1))
    return cases + [("triad", size, COPY_DTYPE, everyone)]


def _run_case(case, device, min_run_time, seconds_per_work, remaining_s):
    """(row, None) after measuring one case, or (None, reason) when it would not fit or failed."""
    if remaining_s <= 0:
        return None, "the time budget is spent"
    try:
        return _predict_and_measure(case, device, min_run_time, seconds_per_work, remaining_s)
    except RuntimeError as error:  # e.g. out of memory, or a dtype this device cannot multiply
        lines = str(error).strip().splitlines() or [type(error).__name__]
        return None, f"failed: {lines[0]}"


def _probe(kind, size, dtype, device) -> tuple[float, float]:
    """(seconds per unit of work, seconds spent) from small cases of one kind and dtype.

    A copy is probed once at a few MB. Products are probed at n = 64, 128, ... below ``size``
    until doubling n makes a call at least 4x longer (8x the FLOPs): the time is then the
    work's, not fixed costs' (threads, launches, a busy machine). Small products run slower per
    FLOP, so the estimate errs long.
    """
    start = time.perf_counter()
    probe = min(size, _PROBE_SIZE if kind == "matmul" else _PROBE_COPY_BYTES // 4)
    previous_s = math.inf
    while True:
        call_s = _call_seconds(kind, _operands(kind, probe, dtype, device), device)
        if kind != "matmul" or call_s >= 4 * previous_s or call_s >= _PROBE_MAX_CALL_S or 2 * probe >= size:
            return call_s / _work(kind, probe), time.perf_counter() - start
        previous_s, probe = call_s, 2 * probe


def _predict_and_measure(case, device, min_run_time, seconds_per_work, remaining_s):
    kind, size, dtype, threads = case
    rate = seconds_per_work.get((kind, dtype, threads))
    if rate is None:
        rate, probe_s = _probe(kind, size, dtype, device)
        remaining_s -= probe_s
    predicted_s = timing.predicted_seconds(rate * _work(kind, size), min_run_time)
    if _SAFETY_FACTOR * predicted_s > remaining_s:
        return None, (
            f"not run: it would take about {format_seconds(predicted_s)} and the sweep starts a case "
            f"only with {_SAFETY_FACTOR:g}x that left; {format_seconds(max(remaining_s, 0.0))} of the "
            "budget was left (a larger budget runs it)"
        )
    operands = _operands(kind, size, dtype, device)
    if kind == "matmul":
        return measure_matmul(*operands, min_run_time=min_run_time), None
    measure = measure_copy if kind == "copy" else measure_triad
    return measure(*operands, min_run_time=min_run_time, threads=threads), None
