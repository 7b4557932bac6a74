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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from lab_utils import checks, machine, roofline, timing
from lab_utils.units import format_bytes, format_rate, format_seconds

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

KINDS = ("matmul", "copy", "triad")
CPU_SIZES = (256, 512, 1024, 2048)
"""Default matrix sizes of a sweep on the CPU."""
GPU_SIZES = (1024, 2048, 4096, 8192)
"""Default matrix sizes on a GPU: below n = 4096 a data-centre GPU's products finish in tens
of microseconds, far from its peak."""
MATMUL_DTYPES = ("fp32", "tf32", "bf16", "fp16")
"""Matrix-product dtypes a sweep can run. tf32 is fp32 storage with TF32 tensor-core
arithmetic: CUDA GPUs of compute capability 8.0 (Ampere) or newer only."""
COPY_DTYPE = "fp32"
"""Element type of the copied arrays (the bandwidth does not depend on it)."""
TRIAD_SCALAR = 3.0

_PROBE_SIZE = 64  # n of the first small product that estimates a dtype's speed
_PROBE_MAX_CALL_S = 0.25  # no probe goes on past a call this long
_PROBE_COPY_BYTES = 4 * 2**20
_SAFETY_FACTOR = (
    2.0  # a case starts only if twice its predicted time fits: larger inputs can run slower per FLOP
)


@dataclass(frozen=True)
class BenchRow:
    """One measured case. Rates are per second of the median call.

    kind: "matmul" | "copy" | "triad"; size: n of the n x n operands (matmul) or the number
    of elements of one array (copy, triad); dtype: "fp32", "tf32", "bf16", "fp16"; device:
    e.g. "cpu", "cuda:0"; median_s: median seconds per call (``timing.measure``) and iqr_s its
    spread; flops_per_call (0 for a copy or triad) and bytes_per_call as counted in the module
    docstring; threads: the CPU threads that did the work (None on a GPU).
    """

    kind: str
    size: int
    dtype: str
    device: str
    median_s: float
    flops_per_s: float
    bytes_per_s: float
    flops_per_call: int
    bytes_per_call: int
    iqr_s: float
    threads: int | None = None

    @property
    def intensity(self) -> float:
        """Arithmetic intensity in FLOP per byte (0 for a copy)."""
        return roofline.arithmetic_intensity(self.flops_per_call, self.bytes_per_call)

    def describe(self) -> str:
        """One line for people, e.g. 'matmul n=1024 fp32 on cpu: 12.0 ms, 179.0 GFLOP/s'."""
        if self.kind == "matmul":
            rate = format_rate(self.flops_per_s, "FLOP/s")
        else:
            rate = format_rate(self.bytes_per_s, "B/s") + " (read + written)"
        what = f"{self.kind} {_size_label(self.kind, self.size, self.dtype)} {self.dtype}"
        where = self.device if self.threads is None else f"{self.device}, {_threads_label(self.threads)}"
        return f"{what} on {where}: {format_seconds(self.median_s)}, {rate}"

    @property
    def array_bytes(self) -> int:
        """Bytes of one array of a copy or triad (0 for a matmul)."""
        return {"copy": self.bytes_per_call // 2, "triad": self.bytes_per_call // 3}.get(self.kind, 0)


def _size_label(kind: str, size: int, dtype: str) -> str:
    """'n=1024' for a product, the bytes of one array (e.g. '268.4 MB') for a copy or triad."""
    return f"n={size}" if kind == "matmul" else format_bytes(size * _torch_dtype(dtype).itemsize)


def _threads_label(threads: int | None) -> str:
    return "-" if threads is None else f"{threads} thread" + ("s" if threads > 1 else "")


@dataclass(frozen=True)
class Skipped:
    """A planned case the sweep did not run, and why."""

    kind: str
    size: int
    dtype: str
    reason: str
    threads: int | None = None

    def describe(self) -> str:
        """One line: 'skipped copy 256.0 MiB fp32 (1 thread): why' (threads where the case has them)."""
        threads = "" if self.threads is None else f" ({_threads_label(self.threads)})"
        size = _size_label(self.kind, self.size, self.dtype)
        return f"skipped {self.kind} {size} {self.dtype}{threads}: {self.reason}"


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
        size = _size_label(self.kind, self.size, self.dtype)
        return f"{head} skipped {self.kind} {size} {self.dtype}: {self.skipped_reason}"


@dataclass(frozen=True)
class BenchTable:
    """The result of :func:`sweep`: the measured rows and the cases skipped, each in the order
    of the sweep's cases (copies, triads, then products by dtype and size), the device, the
    budget and the seconds the sweep took."""

    rows: tuple[BenchRow, ...]
    skipped: tuple[Skipped, ...]
    device: str
    budget_s: float
    elapsed_s: float

    def select(
        self, kind: str | None = None, dtype: str | None = None, threads: int | None = None
    ) -> tuple[BenchRow, ...]:
        """The rows of one kind, dtype and/or thread count (None: any)."""
        if kind is not None and kind not in KINDS:
            raise ValueError(f"kind={kind!r} is not one of {KINDS}")
        return tuple(
            r
            for r in self.rows
            if kind in (None, r.kind) and dtype in (None, r.dtype) and threads in (None, r.threads)
        )

    def best(self, kind: str, dtype: str | None = None, threads: int | None = None) -> BenchRow | None:
        """The fastest row of ``kind`` (highest FLOP/s for matmul, bytes/s for copy and triad), or
        None; ``threads=1`` picks among one-thread rows."""
        if kind not in KINDS:
            raise ValueError(f"kind={kind!r} is not one of {KINDS}")
        rate = (lambda r: r.flops_per_s) if kind == "matmul" else (lambda r: r.bytes_per_s)
        return max(self.select(kind, dtype, threads), key=rate, default=None)

    def points(self, suffix: str = "measured here") -> tuple[roofline.Point, ...]:
        """The matmul rows as roofline points, labelled e.g. 'fp32 matmul on cpu, measured here'."""
        return tuple(
            roofline.Point(f"{r.dtype} matmul on {r.device}, {suffix}", r.intensity, r.flops_per_s)
            for r in self.rows
            if r.kind == "matmul"
        )

    def __str__(self) -> str:
        from tabulate import tabulate

        header = ("kind", "size", "dtype", "device", "threads", "time/call", "FLOP/s", "bytes/s")
        lines = []
        for r in self.rows:
            size = _size_label(r.kind, r.size, r.dtype)
            flops = format_rate(r.flops_per_s, "FLOP/s") if r.kind == "matmul" else "-"
            lines.append(
                (
                    r.kind,
                    size,
                    r.dtype,
                    r.device,
                    _threads_label(r.threads),
                    format_seconds(r.median_s),
                    flops,
                    format_rate(r.bytes_per_s, "B/s"),
                )
            )
        text = [tabulate(lines, headers=header, tablefmt="simple", disable_numparse=True)]
        text.append(
            f"{len(self.rows)} case(s) in {self.elapsed_s:.1f} s of a {self.budget_s:g} s budget"
            f"; bytes/s counts bytes read + written"
        )
        counts = {r.threads for r in self.select("copy") if r.threads}
        if 1 in counts and len(counts) > 1:
            everyone, one = self.best("copy", threads=max(counts)), self.best("copy", threads=1)
            text.append(
                f"copy bandwidth: {format_rate(everyone.bytes_per_s, 'B/s')} with "
                f"{_threads_label(everyone.threads)}, {format_rate(one.bytes_per_s, 'B/s')} with one "
                f"({everyone.bytes_per_s / one.bytes_per_s:.2f}x)"
            )
        text += [s.describe() for s in self.skipped]
        return "\n".join(text)


# --- measuring one case ----------------------------------------------------------------------


def _dtype_name(tensor) -> str:
    import torch

    names = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}
    name = names.get(tensor.dtype, str(tensor.dtype).removeprefix("torch."))
    if name == "fp32" and tensor.device.type == "cuda" and _tf32_matmuls():
        name = "tf32"  # what cuBLAS runs for fp32 products when TF32 is allowed
    return name


def _tf32_matmuls() -> bool:
    """Whether CUDA fp32 products may use TF32, read through whichever API is in use: torch 2.9+
    ``torch.backends.cuda.matmul.fp32_precision`` ("tf32" | "ieee" | "none": not set), else
    ``torch.get_float32_matmul_precision()`` (which raises once both APIs have been used)."""
    import torch

    mode = getattr(torch.backends.cuda.matmul, "fp32_precision", "none")
    if mode != "none":
        return mode == "tf32"
    return torch.get_float32_matmul_precision() != "highest"


def _check_tensor(name: str, value):
    import torch

    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    return value


def _check_min_run_time(min_run_time) -> float:
    return checks.number("min_run_time", min_run_time)


def _cpu_threads(device, threads) -> int | None:
    """The thread count a CPU measurement uses (None: all of torch's); None on a GPU."""
    import torch

    if device.type != "cpu":
        if threads is not None:
            raise ValueError(
                f"threads={threads!r}: only CPU measurements take a thread count; the arrays are on {device}"
            )
        return None
    return torch.get_num_threads() if threads is None else checks.count("threads", threads)


def measure_matmul(a, b, *, min_run_time: float = 0.2) -> BenchRow:
    """Time ``a @ b`` for two n x n tensors on their device with ``timing.measure``.

    The row's dtype is the tensors' (fp32 reads "tf32" on a CUDA device when torch's fp32
    matmul precision allows TF32, since cuBLAS then uses it).
    """
    a, b = _check_tensor("a", a), _check_tensor("b", b)
    if a.dim() != 2 or a.shape[0] != a.shape[1] or a.shape != b.shape:
        raise ValueError(
            f"a and b must be square n x n matrices of one shape, got {tuple(a.shape)} and {tuple(b.shape)}"
        )
    if a.dtype != b.dtype or a.device != b.device:
        raise ValueError(
            f"a and b must share dtype and device, got {a.dtype}/{a.device} and {b.dtype}/{b.device}"
        )
    min_run_time = _check_min_run_time(min_run_time)
    n = a.shape[0]
    flops = roofline.matmul_flops(n, n, n)
    moved = roofline.matmul_bytes(n, n, n, a.element_size())
    result = timing.measure(lambda: a @ b, device=a.device, min_run_time=min_run_time)
    return BenchRow(
        "matmul",
        n,
        _dtype_name(a),
        str(a.device),
        result.median_s,
        flops / result.median_s,
        moved / result.median_s,
        flops,
        moved,
        result.iqr_s,
    )


def _check_arrays(**arrays):
    """The tensors, checked to share shape, dtype and device and to be contiguous."""
    tensors = [_check_tensor(name, value) for name, value in arrays.items()]
    first = tensors[0]
    if any(t.shape != first.shape or t.dtype != first.dtype or t.device != first.device for t in tensors):
        described = " and ".join(
            f"{name} {tuple(t.shape)} {t.dtype} {t.device}" for name, t in zip(arrays, tensors)
        )
        raise ValueError(f"{', '.join(arrays)} must share shape, dtype and device, got {described}")
    if not all(t.is_contiguous() for t in tensors):
        raise ValueError(f"{', '.join(arrays)} must be contiguous, so that every byte is moved once")
    return tensors


def _bandwidth_row(kind: str, result, first, moved: int, threads: int | None) -> BenchRow:
    return BenchRow(
        kind,
        first.numel(),
        _dtype_name(first),
        str(first.device),
        result.median_s,
        0.0,
        moved / result.median_s,
        0,
        moved,
        result.iqr_s,
        threads,
    )


def _chunks(array, parts: int) -> list:
    """``array`` (1-D) cut into ``parts`` contiguous pieces on 4 KiB page boundaries."""
    step = max(-(-array.size // parts // 4096), 1) * 4096
    return [array[start : start + step] for start in range(0, array.size, step)]


def measure_copy(src, dst, *, min_run_time: float = 0.2, threads: int | None = None) -> BenchRow:
    """Time copying ``src`` into ``dst`` on their device with ``timing.measure``; bytes/s counts
    the bytes read plus the bytes written (2 x the array's size), as STREAM's copy does.

    On a GPU the copy is ``dst.copy_(src)``. On the CPU it is NumPy's memcpy over the same
    memory, cut into ``threads`` pieces copied by as many threads at once (None: all of torch's
    threads; NumPy releases the GIL while it copies). torch's ``copy_`` is not used on the CPU:
    it reads each destination line before writing it, which loses up to a third of the
    bandwidth when other programs keep the memory bus busy.
    """
    src, dst = _check_arrays(src=src, dst=dst)
    min_run_time = _check_min_run_time(min_run_time)
    threads = _cpu_threads(src.device, threads)
    moved = 2 * src.numel() * src.element_size()
    if src.device.type != "cpu":
        result = timing.measure(
            functools.partial(dst.copy_, src), device=src.device, min_run_time=min_run_time
        )
        return _bandwidth_row("copy", result, src, moved, None)
    import numpy as np
    import torch

    src_bytes, dst_bytes = src.view(torch.uint8).numpy(), dst.view(torch.uint8).numpy()
    if threads == 1:
        result = timing.measure(
            functools.partial(np.copyto, dst_bytes, src_bytes), device="cpu", min_run_time=min_run_time
        )
    else:
        pieces = _chunks(dst_bytes, threads), _chunks(src_bytes, threads)
        with ThreadPoolExecutor(max_workers=threads) as pool:
            result = timing.measure(
                lambda: list(pool.map(np.copyto, *pieces)), device="cpu", min_run_time=min_run_time
            )
    return _bandwidth_row("copy", result, src, moved, threads)


def measure_triad(
    a, b, c, *, scalar: float = TRIAD_SCALAR, min_run_time: float = 0.2, threads: int | None = None
) -> BenchRow:
    """Time STREAM's triad ``a = b + scalar * c`` (one pass, ``torch.add(b, c, alpha=scalar,
    out=a)``) with ``timing.measure``; bytes/s counts 3 x the array's size (b and c read, a
    written). On the CPU torch's own thread pool does the work with ``threads`` threads (None:
    all of them)."""
    a, b, c = _check_arrays(a=a, b=b, c=c)
    scalar = checks.number("scalar", scalar, strict=False)
    min_run_time = _check_min_run_time(min_run_time)
    threads = _cpu_threads(a.device, threads)
    import torch

    result = timing.measure(
        functools.partial(torch.add, b, c, alpha=scalar, out=a),
        device=a.device,
        min_run_time=min_run_time,
        threads=threads,
    )
    return _bandwidth_row("triad", result, a, 3 * a.numel() * a.element_size(), threads)


# --- the sweep -------------------------------------------------------------------------------


def _torch_dtype(name: str):
    import torch

    return {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]


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
