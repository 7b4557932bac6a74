"""Time-boxed sweeps on one device: matrix-product throughput and memory-copy bandwidth.

:func:`sweep` times square matrix products over sizes and dtypes, and a memory copy over
array sizes, each with ``timing.measure``; it starts no case that it predicts would overrun
its time budget, and returns a frozen :class:`BenchTable`. Notebook 02 calls it, and so will
``lab-utils bench``: nothing here assumes a notebook.

What is counted (``lab_utils.roofline``):

- an n x n product: 2n^3 FLOPs and 3n^2 elements moved (both operands read once, the result
  written once), the least traffic the product can have;
- a copy of an N-byte array: 2N bytes, N read + N written, as the STREAM benchmark counts
  (McCalpin). The extra read most CPUs make of the destination before writing it
  (write-allocate) is not counted, so the copy figure understates the traffic of the memory
  bus by up to a third.

torch loads only when a sweep runs.
"""

from __future__ import annotations

import contextlib
import functools
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from lab_utils import checks, machine, roofline, timing
from lab_utils.units import format_bytes, format_rate, format_seconds

__all__ = [
    "COPY_DTYPE", "KINDS", "MATMUL_DTYPES", "BenchRow", "BenchTable", "Progress", "Skipped",
    "measure_copy", "measure_matmul", "sweep",
]

KINDS = ("matmul", "copy")
MATMUL_DTYPES = ("fp32", "tf32", "bf16", "fp16")
"""Matrix-product dtypes a sweep can run. tf32 is fp32 storage with TF32 tensor-core
arithmetic: CUDA GPUs of compute capability 8.0 (Ampere) or newer only."""
COPY_DTYPE = "fp32"
"""Element type of the copied arrays (the bandwidth does not depend on it)."""

_PROBE_SIZE = 64  # n of the first small product that estimates a dtype's speed
_PROBE_MAX_CALL_S = 0.25  # no probe goes on past a call this long
_PROBE_COPY_BYTES = 4 * 2**20
_ASSUMED_CLOCK_OVERHEAD_S = 1e-5  # for predicting the block-size search of Timer.blocked_autorange
_SAFETY_FACTOR = 2.0  # a case starts only if twice its predicted time fits: larger inputs can run slower per FLOP


@dataclass(frozen=True)
class BenchRow:
    """One measured case. Rates are per second of the median call.

    kind: "matmul" | "copy"; size: n of the n x n operands (matmul) or the number of
    elements copied (copy); dtype: "fp32", "tf32", "bf16", "fp16"; device: e.g. "cpu",
    "cuda:0"; seconds: median seconds per call (``timing.measure``) and iqr_s its spread;
    flops_per_call (0 for a copy) and bytes_per_call as counted in the module docstring.
    """

    kind: str
    size: int
    dtype: str
    device: str
    seconds: float
    flops_per_s: float
    bytes_per_s: float
    flops_per_call: int
    bytes_per_call: int
    iqr_s: float

    @property
    def intensity(self) -> float:
        """Arithmetic intensity in FLOP per byte (0 for a copy)."""
        return roofline.arithmetic_intensity(self.flops_per_call, self.bytes_per_call)

    def describe(self) -> str:
        """One line for people, e.g. 'matmul n=1024 fp32 on cpu: 12.0 ms, 179.0 GFLOP/s'."""
        if self.kind == "matmul":
            what, rate = f"matmul n={self.size} {self.dtype}", format_rate(self.flops_per_s, "FLOP/s")
        else:
            what = f"copy {format_bytes(self.bytes_per_call / 2)} {self.dtype}"
            rate = format_rate(self.bytes_per_s, "B/s") + " (read + written)"
        return f"{what} on {self.device}: {format_seconds(self.seconds)}, {rate}"


@dataclass(frozen=True)
class Skipped:
    """A planned case the sweep did not run, and why."""

    kind: str
    size: int
    dtype: str
    reason: str


@dataclass(frozen=True)
class Progress:
    """What a sweep reports after each planned case: ``done`` of ``total`` cases so far,
    the case, its row (None when skipped, then ``skipped_reason`` says why) and the seconds
    spent since the sweep started."""

    done: int
    total: int
    kind: str
    size: int
    dtype: str
    row: BenchRow | None
    skipped_reason: str | None
    elapsed_s: float

    def __str__(self) -> str:
        head = f"[{self.done}/{self.total}, {self.elapsed_s:.1f} s]"
        if self.row is not None:
            return f"{head} {self.row.describe()}"
        return f"{head} skipped {self.kind} size={self.size} {self.dtype}: {self.skipped_reason}"


@dataclass(frozen=True)
class BenchTable:
    """The result of :func:`sweep`: measured rows in the order run, the cases skipped, the
    device, the budget and the seconds the sweep took."""

    rows: tuple[BenchRow, ...]
    skipped: tuple[Skipped, ...]
    device: str
    budget_s: float
    elapsed_s: float

    def select(self, kind: str | None = None, dtype: str | None = None) -> tuple[BenchRow, ...]:
        """The rows of one kind and/or dtype (None: any)."""
        if kind is not None and kind not in KINDS:
            raise ValueError(f"kind={kind!r} is not one of {KINDS}")
        return tuple(r for r in self.rows if kind in (None, r.kind) and dtype in (None, r.dtype))

    def best(self, kind: str, dtype: str | None = None) -> BenchRow | None:
        """The fastest row of ``kind`` (highest FLOP/s for matmul, bytes/s for copy), or None."""
        if kind not in KINDS:
            raise ValueError(f"kind={kind!r} is not one of {KINDS}")
        rate = (lambda r: r.flops_per_s) if kind == "matmul" else (lambda r: r.bytes_per_s)
        return max(self.select(kind, dtype), key=rate, default=None)

    def points(self, suffix: str = "measured here") -> tuple[roofline.Point, ...]:
        """The matmul rows as roofline points, labelled e.g. 'fp32 matmul on cpu, measured here'."""
        return tuple(
            roofline.Point(f"{r.dtype} matmul on {r.device}, {suffix}", r.intensity, r.flops_per_s)
            for r in self.rows if r.kind == "matmul"
        )

    def __str__(self) -> str:
        from tabulate import tabulate

        header = ("kind", "size", "dtype", "device", "time/call", "FLOP/s", "bytes/s")
        lines = []
        for r in self.rows:
            size = f"n={r.size}" if r.kind == "matmul" else format_bytes(r.bytes_per_call / 2)
            flops = format_rate(r.flops_per_s, "FLOP/s") if r.kind == "matmul" else "-"
            lines.append((r.kind, size, r.dtype, r.device, format_seconds(r.seconds), flops,
                          format_rate(r.bytes_per_s, "B/s")))
        text = [tabulate(lines, headers=header, tablefmt="simple", disable_numparse=True)]
        text.append(f"{len(self.rows)} case(s) in {self.elapsed_s:.1f} s of a {self.budget_s:g} s budget"
                    f"; bytes/s counts bytes read + written")
        text += [f"skipped {s.kind} size={s.size} {s.dtype}: {s.reason}" for s in self.skipped]
        return "\n".join(text)


# --- measuring one case ----------------------------------------------------------------------

def _dtype_name(tensor) -> str:
    import torch

    names = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}
    name = names.get(tensor.dtype, str(tensor.dtype).removeprefix("torch."))
    if name == "fp32" and tensor.device.type == "cuda" and torch.get_float32_matmul_precision() != "highest":
        name = "tf32"  # what cuBLAS runs for fp32 products at "high" or "medium" precision
    return name


def _check_tensor(name: str, value):
    import torch

    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    return value


def _check_min_run_time(min_run_time) -> float:
    return checks.number("min_run_time", min_run_time)


def measure_matmul(a, b, *, min_run_time: float = 0.2) -> BenchRow:
    """Time ``a @ b`` for two n x n tensors on their device with ``timing.measure``.

    The row's dtype is the tensors' (fp32 reads "tf32" on a CUDA device when
    ``torch.get_float32_matmul_precision()`` is not "highest", since cuBLAS then uses TF32).
    """
    a, b = _check_tensor("a", a), _check_tensor("b", b)
    if a.dim() != 2 or a.shape[0] != a.shape[1] or a.shape != b.shape:
        raise ValueError(f"a and b must be square n x n matrices of one shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.dtype != b.dtype or a.device != b.device:
        raise ValueError(f"a and b must share dtype and device, got {a.dtype}/{a.device} and {b.dtype}/{b.device}")
    min_run_time = _check_min_run_time(min_run_time)
    n = a.shape[0]
    flops = roofline.matmul_flops(n, n, n)
    moved = roofline.matmul_bytes(n, n, n, a.element_size())
    result = timing.measure(lambda: a @ b, device=a.device, min_run_time=min_run_time)
    return BenchRow("matmul", n, _dtype_name(a), str(a.device), result.median_s, flops / result.median_s,
                    moved / result.median_s, flops, moved, result.iqr_s)


def measure_copy(src, dst, *, min_run_time: float = 0.2) -> BenchRow:
    """Time copying ``src`` into ``dst`` on their device with ``timing.measure``; bytes/s counts
    the bytes read plus the bytes written (2 x the array's size), as STREAM's copy does.

    On a GPU the copy is ``dst.copy_(src)``. On the CPU it is NumPy's memcpy over the same
    memory: torch's ``copy_`` reads each destination line before writing it, which loses up to
    a third of the bandwidth when other programs keep the memory bus busy.
    """
    src, dst = _check_tensor("src", src), _check_tensor("dst", dst)
    if src.shape != dst.shape or src.dtype != dst.dtype or src.device != dst.device:
        raise ValueError(
            f"src and dst must share shape, dtype and device, got {tuple(src.shape)} {src.dtype} {src.device} "
            f"and {tuple(dst.shape)} {dst.dtype} {dst.device}")
    if not (src.is_contiguous() and dst.is_contiguous()):
        raise ValueError("src and dst must be contiguous, so that every byte is moved once")
    min_run_time = _check_min_run_time(min_run_time)
    moved = 2 * src.numel() * src.element_size()
    if src.device.type == "cpu":
        import numpy as np
        import torch

        src_bytes, dst_bytes = src.view(torch.uint8).numpy(), dst.view(torch.uint8).numpy()
        copy = functools.partial(np.copyto, dst_bytes, src_bytes)
    else:
        copy = functools.partial(dst.copy_, src)
    result = timing.measure(copy, device=src.device, min_run_time=min_run_time)
    return BenchRow("copy", src.numel(), _dtype_name(src), str(src.device), result.median_s, 0.0,
                    moved / result.median_s, 0, moved, result.iqr_s)


# --- the sweep -------------------------------------------------------------------------------

def _torch_dtype(name: str):
    import torch

    return {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]


@contextlib.contextmanager
def _matmul_precision(dtype: str):
    """fp32 products in full fp32 ("highest"), tf32 ones with TF32 ("high"); restored after."""
    import torch

    before = torch.get_float32_matmul_precision()
    if dtype in ("fp32", "tf32"):
        torch.set_float32_matmul_precision("high" if dtype == "tf32" else "highest")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


def _unsupported(dtype: str, device) -> str | None:
    """Why ``dtype`` cannot run on ``device``, or None."""
    import torch

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
        return (torch.randn(size, size, dtype=_torch_dtype(dtype), device=device),
                torch.randn(size, size, dtype=_torch_dtype(dtype), device=device))
    # ones, not empty: the source pages must really exist, or reads cost no memory traffic
    return (torch.ones(size, dtype=_torch_dtype(COPY_DTYPE), device=device),
            torch.zeros(size, dtype=_torch_dtype(COPY_DTYPE), device=device))


def _call_seconds(kind: str, operands, device) -> float:
    """Seconds of one synchronized call (the second of two: the first warms up)."""
    x, y = operands
    call = (lambda: x @ y) if kind == "matmul" else (lambda: y.copy_(x))
    seconds = math.inf
    for _ in range(2):
        machine.synchronize(device)
        start = time.perf_counter()
        call()
        machine.synchronize(device)
        seconds = time.perf_counter() - start
    return seconds


def _work(kind: str, size: int) -> float:
    """FLOPs (matmul) or elements (copy): what one call's time grows with."""
    return roofline.matmul_flops(size, size, size) if kind == "matmul" else float(size)


def _predicted_measure_s(call_s: float, min_run_time: float) -> float:
    """Seconds ``timing.measure`` will take for calls of ``call_s``: Timer.blocked_autorange
    first times blocks of 1, 10, 100, ... calls until a block is long enough, then repeats
    that block until ``min_run_time`` has passed."""
    number, spent = 1, 0.0
    while True:
        block = number * max(call_s, 1e-9)
        spent += block
        if (block >= 1e4 * _ASSUMED_CLOCK_OVERHEAD_S and block >= min_run_time / 1000) or block > min_run_time:
            break
        number *= 10
    return spent + math.ceil(min_run_time / block) * block


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


def sweep(*, sizes: Iterable[int] = (256, 512, 1024, 2048), dtypes: Iterable[str] = ("fp32",),
          copy_bytes: Iterable[int] = (256 * 2**20,), device=None, budget_s: float = 10.0,
          min_run_time: float = 0.1,
          progress: bool | Callable[[Progress], None] | None = None) -> BenchTable:
    """Measure copies of each size in ``copy_bytes`` (bytes of one array), then n x n products
    for each dtype in ``dtypes`` and n in ``sizes`` (ascending), on ``device`` (None:
    ``machine.pick_device()``), within about ``budget_s`` seconds.

    Before each case the sweep predicts its cost from the last size of that kind and dtype (or
    from a small probe) and skips it, with the reason, unless twice that fits in what is left of
    the budget (one case can still overrun it when a size runs much slower than the last); a tf32
    case is skipped where the device has no TF32, and a case that raises a RuntimeError (out of
    memory, a dtype the device cannot multiply) is skipped with the error's first line.
    ``min_run_time`` goes to ``timing.measure``.
    ``progress``: None or False for silence, True to print one line per case, or a function
    called with a :class:`Progress` after each case.
    """
    sizes = _check_sizes("sizes", sizes, 1)
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
    device = machine.as_device(device)

    cases = [("copy", nbytes // 4, COPY_DTYPE) for nbytes in copy_bytes]
    cases += [("matmul", n, dtype) for dtype in dtypes for n in sizes]
    rows: list[BenchRow] = []
    skipped: list[Skipped] = []
    seconds_per_work: dict[tuple[str, str], float] = {}
    start = time.perf_counter()

    for done, (kind, size, dtype) in enumerate(cases, start=1):
        row, reason = None, _unsupported(dtype, device)
        if reason is None:
            with _matmul_precision(dtype):
                row, reason = _run_case(kind, size, dtype, device, min_run_time, seconds_per_work,
                                        budget_s - (time.perf_counter() - start))
        if row is not None:
            rows.append(row)
            seconds_per_work[(kind, dtype)] = row.seconds / _work(kind, size)
        else:
            skipped.append(Skipped(kind, size, dtype, reason))
        if report is not None:
            report(Progress(done, len(cases), kind, size, dtype, row, reason, time.perf_counter() - start))

    return BenchTable(tuple(rows), tuple(skipped), str(device), float(budget_s), time.perf_counter() - start)


def _run_case(kind, size, dtype, device, min_run_time, seconds_per_work, remaining_s):
    """(row, None) after measuring one case, or (None, reason) when it would not fit or failed."""
    if remaining_s <= 0:
        return None, "the time budget is spent"
    try:
        return _predict_and_measure(kind, size, dtype, device, min_run_time, seconds_per_work, remaining_s)
    except RuntimeError as error:  # e.g. out of memory, or a dtype this device cannot multiply
        lines = str(error).strip().splitlines() or [type(error).__name__]
        return None, f"failed: {lines[0]}"


def _probe(kind, size, dtype, device) -> tuple[float, float]:
    """(seconds per unit of work, seconds spent) from small cases of one kind and dtype.

    A copy is probed once at a few MiB. Products are probed at n = 64, 128, ... below ``size``
    until doubling n makes a call at least 4x longer (8x the FLOPs): the time is then the
    work's, not fixed costs' (threads, launches, a busy machine). Small products run slower per
    FLOP, so the estimate errs long.
    """
    start = time.perf_counter()
    probe = min(size, _PROBE_SIZE if kind == "matmul" else _PROBE_COPY_BYTES // 4)
    previous_s = math.inf
    while True:
        call_s = _call_seconds(kind, _operands(kind, probe, dtype, device), device)
        if (kind == "copy" or call_s >= 4 * previous_s or call_s >= _PROBE_MAX_CALL_S
                or 2 * probe >= size):
            return call_s / _work(kind, probe), time.perf_counter() - start
        previous_s, probe = call_s, 2 * probe


def _predict_and_measure(kind, size, dtype, device, min_run_time, seconds_per_work, remaining_s):
    rate = seconds_per_work.get((kind, dtype))
    if rate is None:
        rate, probe_s = _probe(kind, size, dtype, device)
        remaining_s -= probe_s
    predicted_s = _predicted_measure_s(rate * _work(kind, size), min_run_time)
    if _SAFETY_FACTOR * predicted_s > remaining_s:
        return None, (f"not run: it would take about {format_seconds(predicted_s)} and the sweep starts a case "
                      f"only with {_SAFETY_FACTOR:g}x that left; {format_seconds(max(remaining_s, 0.0))} of the "
                      "budget was left (a larger budget runs it)")
    measure = measure_matmul if kind == "matmul" else measure_copy
    return measure(*_operands(kind, size, dtype, device), min_run_time=min_run_time), None
