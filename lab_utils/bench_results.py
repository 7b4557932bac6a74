"""What a sweep of ``lab_utils.bench`` reports: the cases it may run, one row per measured case
(:class:`BenchRow`), a case skipped and why (:class:`Skipped`), its progress and the table."""

from __future__ import annotations

from dataclasses import dataclass

from lab_utils import roofline
from lab_utils.units import format_bytes, format_rate, format_seconds

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


def _torch_dtype(name: str):
    import torch

    return {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]


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
