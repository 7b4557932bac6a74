"""The cost of communication between ranks: all-reduce formulas, a fit to timings, a data-parallel
step, and which backend a rank uses. Pure arithmetic (no torch), bytes and seconds.

- :func:`ring_all_reduce_bytes`: a ring all-reduce of an n-byte message over N ranks sends
  (and receives) 2(N-1)/N · n bytes per rank: N-1 reduce-scatter steps and N-1 all-gather
  steps of n/N bytes each (Patarasuk & Yuan, JPDC 69(2), 2009; Thakur, Rabenseifner & Gropp,
  IJHPCA 19(1), 2005).
- :func:`ring_all_reduce_seconds`: the alpha-beta model of the same algorithm,
  t = 2(N-1)·α + 2(N-1)/N · n/β, with α the latency of one step and β the link bandwidth.
- :func:`all_to_all_bytes`: an all-to-all (a mixture of experts' dispatch and combine) sends
  (N-1)/N · n bytes per rank, n spread evenly over the ranks.
- :func:`bus_bandwidth_bytes_per_s`: nccl-tests' "bus bandwidth", (n/t) · 2(N-1)/N, which is
  comparable with a link's bandwidth whatever N is; :func:`fit_all_reduce` fits α and β to
  measured times.
- :func:`data_parallel_step`: compute vs communication of one data-parallel step;
  :func:`choose_backend`: NCCL on GPUs, gloo on CPUs.

Launching ranks and timing them is ``lab_utils.distributed``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lab_utils import checks

__all__ = [
    "AllReduceFit",
    "Backend",
    "DataParallelStep",
    "bus_bandwidth_bytes_per_s",
    "choose_backend",
    "data_parallel_step",
    "fit_all_reduce",
    "all_to_all_bytes",
    "ring_all_reduce_bytes",
    "ring_all_reduce_seconds",
]


def ring_all_reduce_bytes(message_bytes, n_ranks: int) -> float:
    """Bytes each rank sends (and receives) in a ring all-reduce: 2(N-1)/N · n.

    Reduce-scatter then all-gather, N-1 steps each, n/N bytes per step (Patarasuk & Yuan 2009).
    Tends to 2n as N grows: the traffic per rank hardly depends on the number of ranks.
    """
    message_bytes = checks.number("message_bytes", message_bytes, strict=False)
    n_ranks = checks.count("n_ranks", n_ranks)
    return 2 * (n_ranks - 1) / n_ranks * message_bytes


def all_to_all_bytes(message_bytes, n_ranks: int) -> float:
    """Bytes each rank sends (and receives) in an all-to-all of ``message_bytes`` spread evenly
    over the ``n_ranks`` ranks: all but its own share, (N-1)/N · n (a mixture of experts'
    dispatch of tokens to the ranks holding their experts, and their return)."""
    message_bytes = checks.number("message_bytes", message_bytes, strict=False)
    n_ranks = checks.count("n_ranks", n_ranks)
    return (n_ranks - 1) / n_ranks * message_bytes


def ring_all_reduce_seconds(message_bytes, n_ranks: int, *, bandwidth_bytes_per_s, latency_s=0.0) -> float:
    """Seconds for a ring all-reduce: 2(N-1)·α + 2(N-1)/N · n/β.

    α = ``latency_s``, the fixed cost of one of the 2(N-1) steps; β = ``bandwidth_bytes_per_s``,
    what one rank can send (and receive at once) over its link. Thakur, Rabenseifner & Gropp
    (2005), the ring / Rabenseifner cost. One rank: nothing to exchange, 0 s.
    """
    bandwidth_bytes_per_s = checks.number("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    latency_s = checks.number("latency_s", latency_s, strict=False)
    steps = 2 * (checks.count("n_ranks", n_ranks) - 1)
    return steps * latency_s + ring_all_reduce_bytes(message_bytes, n_ranks) / bandwidth_bytes_per_s


def bus_bandwidth_bytes_per_s(message_bytes, seconds, n_ranks: int) -> float:
    """nccl-tests' bus bandwidth of an all-reduce: algorithm bandwidth n/t times 2(N-1)/N.

    The rate at which each rank's link carried the ring's traffic; for N = 2 it equals n/t.
    (NVIDIA nccl-tests, doc/PERFORMANCE.md.)
    """
    seconds = checks.number("seconds", seconds)
    return ring_all_reduce_bytes(message_bytes, n_ranks) / seconds


@dataclass(frozen=True)
class AllReduceFit:
    """α (``latency_s``, per ring step) and β (``bandwidth_bytes_per_s``) fitted to timings."""

    latency_s: float
    bandwidth_bytes_per_s: float
    n_ranks: int

    def seconds(self, message_bytes) -> float:
        """The fitted model's time for an all-reduce of ``message_bytes`` over ``n_ranks``."""
        return ring_all_reduce_seconds(
            message_bytes,
            self.n_ranks,
            latency_s=self.latency_s,
            bandwidth_bytes_per_s=self.bandwidth_bytes_per_s,
        )


def fit_all_reduce(message_bytes, seconds, n_ranks: int) -> AllReduceFit:
    """Fit t = 2(N-1)·α + 2(N-1)/N · n/β to measured all-reduce times (relative least squares).

    Each point is weighted by 1/t², so small messages (latency) and large ones (bandwidth)
    count alike. A negative intercept is clamped to α = 0.
    """
    sizes = checks.numbers("message_bytes", message_bytes)
    times = checks.numbers("seconds", seconds)
    n_ranks = checks.count("n_ranks", n_ranks, minimum=2)
    if len(sizes) != len(times):
        raise ValueError(f"message_bytes has {len(sizes)} values but seconds has {len(times)}")
    if len(set(sizes)) < 2:
        raise ValueError(f"message_bytes={sizes!r}: need at least two different sizes to fit a line")
    xs = [ring_all_reduce_bytes(size, n_ranks) for size in sizes]
    weights = [1 / t**2 for t in times]
    # Weighted least squares for t = a + b·x.
    sw = sum(weights)
    sx = sum(w * x for w, x in zip(weights, xs))
    sy = sum(w * t for w, t in zip(weights, times))
    sxx = sum(w * x * x for w, x in zip(weights, xs))
    sxy = sum(w * x * t for w, x, t in zip(weights, xs, times))
    slope = (sw * sxy - sx * sy) / (sw * sxx - sx * sx)
    intercept = (sy - slope * sx) / sw
    if intercept < 0:
        intercept, slope = 0.0, sxy / sxx
    if slope <= 0:
        raise ValueError("the times do not grow with the message size: no bandwidth can be fitted")
    return AllReduceFit(
        latency_s=intercept / (2 * (n_ranks - 1)), bandwidth_bytes_per_s=1 / slope, n_ranks=n_ranks
    )


@dataclass(frozen=True)
class DataParallelStep:
    """One data-parallel training step per rank: ``compute_s`` (forward + backward + update)
    and ``communication_s`` (the gradient all-reduce)."""

    compute_s: float
    communication_s: float

    @property
    def serial_s(self) -> float:
        """No overlap: the all-reduce starts after the backward pass ends."""
        return self.compute_s + self.communication_s

    @property
    def overlapped_s(self) -> float:
        """Perfect overlap (the best DDP's gradient buckets can do): the longer of the two."""
        return max(self.compute_s, self.communication_s)

    @property
    def compute_to_communication(self) -> float:
        """compute_s / communication_s: above 1, communication can hide behind compute."""
        return math.inf if self.communication_s == 0 else self.compute_s / self.communication_s


def data_parallel_step(
    compute_s, gradient_bytes, n_ranks: int, *, bandwidth_bytes_per_s, latency_s=0.0
) -> DataParallelStep:
    """Compute and ring all-reduce time of one data-parallel step (gradients of ``gradient_bytes``)."""
    return DataParallelStep(
        compute_s=checks.number("compute_s", compute_s, strict=False),
        communication_s=ring_all_reduce_seconds(
            gradient_bytes, n_ranks, latency_s=latency_s, bandwidth_bytes_per_s=bandwidth_bytes_per_s
        ),
    )


@dataclass(frozen=True)
class Backend:
    """The torch.distributed backend and device type a rank uses, and why."""

    name: str  # "nccl" | "gloo"
    device_type: str  # "cuda" | "cpu"
    reason: str


def choose_backend(cuda_device_count: int, local_world_size: int) -> Backend:
    """NCCL with one GPU per rank when this node has a GPU for every local rank, else gloo on CPU.

    NCCL cannot put two ranks on one GPU, so with fewer GPUs than local ranks the run falls
    back to gloo on the CPU rather than failing.
    """
    cuda_device_count = checks.count("cuda_device_count", cuda_device_count, minimum=0)
    local_world_size = checks.count("local_world_size", local_world_size)
    if cuda_device_count >= local_world_size:
        return Backend("nccl", "cuda", f"{cuda_device_count} GPU(s) for {local_world_size} local rank(s)")
    if cuda_device_count:
        return Backend(
            "gloo",
            "cpu",
            f"only {cuda_device_count} GPU(s) for {local_world_size} local ranks: "
            "NCCL needs one GPU per rank",
        )
    return Backend("gloo", "cpu", "no GPU")
