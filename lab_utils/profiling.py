"""Where a training step's time goes: profiler categories, a CPU-bound input pipeline, sizes.

``group_profile`` sorts ``torch.profiler`` operator times into a few categories a learner can
reason about (matrix products, element-wise work, the optimizer, data, the rest).
``DecodeAugmentDataset`` is a map-style dataset whose items cost real CPU work, as decoding and
augmenting an image does; it lives here, in a module, because DataLoader workers started with
"spawn" (macOS, Windows) must import the dataset's class, which a notebook cannot offer them.
``time_loader`` splits a loop's time into waiting for data and computing. torch is imported
inside the functions that need it.
"""

from __future__ import annotations

import io
import re
import timeit
from dataclasses import dataclass

from lab_utils import checks, machine

CATEGORIES = ("matmul", "elementwise", "optimizer", "data", "other")
CLOCKS = ("cpu", "device")

# Operator stems (namespace, leading "_", trailing "_" and "_backward..." removed) per category.
_MATMUL_STEMS = frozenset(
    {
        "mm",
        "addmm",
        "bmm",
        "baddbmm",
        "addbmm",
        "matmul",
        "linear",
        "mv",
        "addmv",
        "dot",
        "einsum",
        "convolution",
        "conv1d",
        "conv2d",
        "conv3d",
        "mkldnn_convolution",
        "linear_dynamic",
        "scaled_dot_product_attention",
        "scaled_dot_product_flash_attention",
        "scaled_dot_product_efficient_attention",
        "scaled_mm",
        "int_mm",
        "fbgemm_linear_int8_weight",
    }
)
_ELEMENTWISE_STEMS = frozenset(
    {
        "add",
        "sub",
        "rsub",
        "mul",
        "div",
        "neg",
        "abs",
        "exp",
        "log",
        "pow",
        "sqrt",
        "rsqrt",
        "reciprocal",
        "gelu",
        "relu",
        "silu",
        "sigmoid",
        "tanh",
        "threshold",
        "clamp",
        "maximum",
        "minimum",
        "where",
        "masked_fill",
        "fill",
        "zero",
        "softmax",
        "log_softmax",
        "layer_norm",
        "native_layer_norm",
        "rms_norm",
        "fused_rms_norm",
        "group_norm",
        "batch_norm",
        "native_batch_norm",
        "dropout",
        "native_dropout",
        "sum",
        "mean",
        "var",
        "std",
        "amax",
        "nll_loss",
        "nll_loss_forward",
        "nll_loss2d",
        "cross_entropy_loss",
        "mse_loss",
        "addcmul",
        "addcdiv",
        "lerp",
        "sign",
        "cos",
        "sin",
        "erf",
    }
)
_OPTIMIZER = re.compile(r"^Optimizer\.|_foreach_|adamw?_?$|fused_adam|fused_sgd|zero_grad", re.IGNORECASE)
_DATA = re.compile(r"^enumerate\(DataLoader\)|DataLoader|^data$|^data[ :/#]", re.IGNORECASE)
_SUFFIXES = re.compile(r"(_backward(_data|_input|_weight)?|_forward|_out)$")


def op_stem(name: str) -> str:
    """``name`` of a profiler event without namespace, leading/trailing "_" and backward suffix:
    ``"aten::native_layer_norm_backward"`` -> ``"native_layer_norm"``."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    stem = name.rsplit("::", 1)[-1].strip().strip("_")
    return _SUFFIXES.sub("", stem).strip("_")


def categorize(name: str) -> str:
    """The category of one profiler event name: one of :data:`CATEGORIES`.

    Optimizer and data are recognised by PyTorch's own labels ("Optimizer.step#AdamW.step",
    "enumerate(DataLoader)...") or a ``record_function("data")`` range; matrix products and
    element-wise operators by their operator name; anything else (views, copies, the autograd
    engine's bookkeeping, embedding lookups) is "other".
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    if _OPTIMIZER.search(name):
        return "optimizer"
    if _DATA.search(name):
        return "data"
    stem = op_stem(name)
    if stem in _MATMUL_STEMS:
        return "matmul"
    if stem in _ELEMENTWISE_STEMS:
        return "elementwise"
    return "other"


@dataclass(frozen=True)
class OpTime:
    """One operator's total self time (its own work, children excluded) over a profile; the same
    operator inside the optimizer and outside it makes two entries."""

    name: str
    category: str
    self_s: float
    calls: int


@dataclass(frozen=True)
class ProfileBreakdown:
    """Self times of a profile grouped by category; ``ops`` sorted by time, largest first.

    Self times do not overlap, so the categories add up to ``total_s``, the busy time of the
    ``clock`` measured ("cpu": host time; "device": GPU kernel time).
    """

    clock: str
    seconds_by_category: tuple[tuple[str, float], ...]  # in CATEGORIES order
    ops: tuple[OpTime, ...]

    @property
    def total_s(self) -> float:
        return sum(seconds for _, seconds in self.seconds_by_category)

    def share(self, category: str) -> float:
        """Fraction of ``total_s`` spent in ``category`` (0 for an empty profile)."""
        checks.choice("category", category, CATEGORIES)
        total = self.total_s
        return dict(self.seconds_by_category)[category] / total if total > 0 else 0.0

    def top_share(self, n: int = 3) -> float:
        """Fraction of ``total_s`` spent in the ``n`` slowest operators."""
        n = checks.count("n", n)
        total = self.total_s
        return sum(op.self_s for op in self.ops[:n]) / total if total > 0 else 0.0


def _self_us(event, clock: str) -> float:
    if clock == "cpu":
        return float(event.self_cpu_time_total)
    for attribute in ("self_device_time_total", "self_cuda_time_total"):  # renamed in torch 2.4
        if hasattr(event, attribute):
            return float(getattr(event, attribute))
    raise ValueError("the events carry no device times: profile with ProfilerActivity.CUDA")


def _labelled_range(event) -> str | None:
    """ "optimizer" or "data" if ``event`` or a range around it carries that label, else None."""
    while event is not None:
        category = categorize(event.key)
        if category in ("optimizer", "data"):
            return category
        event = getattr(event, "cpu_parent", None)
    return None


def group_profile(events, *, clock: str = "cpu") -> ProfileBreakdown:
    """Group profiler ``events`` by category, from their self times (microseconds).

    Pass ``prof.events()``: an operator run inside ``Optimizer.step`` or a
    ``record_function("data")`` range then counts for the optimizer or for data, whatever its
    name; other operators go by :func:`categorize`. ``prof.key_averages()`` works too but has
    lost that nesting, so it goes by names alone. Items need ``key`` and
    ``self_cpu_time_total`` (``self_device_time_total`` for ``clock="device"``).
    """
    clock = checks.choice("clock", clock, CLOCKS)
    events = checks.sequence("events", events)
    totals = {category: 0.0 for category in CATEGORIES}
    by_op: dict[tuple[str, str], list] = {}
    for event in events:
        seconds = _self_us(event, clock) / 1e6
        if seconds <= 0:
            continue
        category = _labelled_range(event) or categorize(event.key)
        totals[category] += seconds
        entry = by_op.setdefault((event.key, category), [0.0, 0])
        entry[0] += seconds
        entry[1] += int(getattr(event, "count", 1))
    ops = sorted(
        (
            OpTime(name=name, category=category, self_s=seconds, calls=calls)
            for (name, category), (seconds, calls) in by_op.items()
        ),
        key=lambda op: op.self_s,
        reverse=True,
    )
    return ProfileBreakdown(clock=clock, seconds_by_category=tuple(totals.items()), ops=tuple(ops))


def state_dict_bytes(model) -> int:
    """Bytes ``torch.save`` writes for ``model.state_dict()``: the size of the weights on disk,
    packed int8 weights of a quantised model included (they are not ``parameters()``)."""
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    return buffer.tell()


class DecodeAugmentDataset:
    """``n_items`` images of ``side`` x ``side`` x 3 that cost CPU work to produce, like a JPEG
    decode plus augmentation: draw raw bytes, convert to float, ``work`` blur passes, a random
    flip, normalise. Item ``i`` is ``(float32 array (3, side, side), label i % 10)`` and is the
    same every time; DataLoader's default collate turns the arrays into tensors.
    """

    def __init__(self, n_items: int = 256, side: int = 64, work: int = 4, seed: int = 0):
        self.n_items = checks.count("n_items", n_items)
        self.side = checks.count("side", side, minimum=2)
        self.work = checks.count("work", work, minimum=0)
        self.seed = checks.count("seed", seed, minimum=0)

    def __len__(self) -> int:
        return self.n_items

    def __getitem__(self, index):
        import numpy as np

        if isinstance(index, bool) or not isinstance(index, int) or not -self.n_items <= index < self.n_items:
            raise IndexError(f"index={index!r} out of range for {self.n_items} items")
        index %= self.n_items
        rng = np.random.default_rng((self.seed, index))
        image = rng.integers(0, 256, size=(self.side, self.side, 3), dtype=np.uint8).astype(np.float32) / 255
        for _ in range(self.work):  # a 5-point blur: stencil work, as in decoding and resizing
            image = (
                image
                + np.roll(image, 1, 0)
                + np.roll(image, -1, 0)
                + np.roll(image, 1, 1)
                + np.roll(image, -1, 1)
            ) / 5
        if rng.random() < 0.5:
            image = image[:, ::-1]
        image = (image - image.mean(axis=(0, 1))) / (image.std(axis=(0, 1)) + 1e-6)
        return np.ascontiguousarray(image.transpose(2, 0, 1), dtype=np.float32), index % 10


@dataclass(frozen=True)
class LoaderRun:
    """One pass of a training loop over a DataLoader, split into waiting and computing.

    ``first_batch_s`` (starting the workers and the first batch) is kept apart; the other
    fields cover the ``batches`` after it.
    """

    num_workers: int
    batches: int
    first_batch_s: float
    wait_s: float  # in next(iterator): the step had no batch yet
    compute_s: float  # in the step, device synchronized

    @property
    def total_s(self) -> float:
        return self.wait_s + self.compute_s

    @property
    def step_s(self) -> float:
        """Seconds per training step, waiting included."""
        return self.total_s / self.batches

    @property
    def wait_fraction(self) -> float:
        """Share of the loop's time in which the device waited for data."""
        return self.wait_s / self.total_s if self.total_s > 0 else 0.0


def time_loader(loader, step, *, max_batches: int | None = None, device=None) -> LoaderRun:
    """Run ``step(batch)`` on the batches of ``loader`` and time the waits and the steps.

    ``device`` (None: ``machine.pick_device()``) is synchronized after every step, so a step's
    queued GPU work is counted as compute, not as the next wait. At most ``max_batches``
    batches after the first are timed (None: all of them).
    """
    if not callable(step):
        raise TypeError(f"step must be callable with one batch, got {type(step).__name__}")
    if max_batches is not None:
        max_batches = checks.count("max_batches", max_batches)
    device = machine.as_device(device)
    started = timeit.default_timer()
    iterator = iter(loader)
    try:
        step(next(iterator))
    except StopIteration:
        raise ValueError("loader gave no batch") from None
    machine.synchronize(device)
    first_batch_s = timeit.default_timer() - started
    wait_s = compute_s = 0.0
    batches = 0
    while max_batches is None or batches < max_batches:
        before = timeit.default_timer()
        try:
            batch = next(iterator)
        except StopIteration:
            break
        got = timeit.default_timer()
        step(batch)
        machine.synchronize(device)
        wait_s += got - before
        compute_s += timeit.default_timer() - got
        batches += 1
    del iterator  # stops the workers now rather than at garbage collection
    if batches == 0:
        raise ValueError("loader gave only one batch: give it at least two to time")
    return LoaderRun(
        num_workers=int(getattr(loader, "num_workers", 0)),
        batches=batches,
        first_batch_s=first_batch_s,
        wait_s=wait_s,
        compute_s=compute_s,
    )
