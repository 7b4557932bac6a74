"""Measuring one case of a ``lab_utils.bench`` sweep: a matrix product (:func:`measure_matmul`), a
copy and a triad (:func:`measure_copy`, :func:`measure_triad`), each a :class:`BenchRow`."""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor

from lab_utils import checks, roofline, timing
from lab_utils.bench_results import TRIAD_SCALAR, BenchRow


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
