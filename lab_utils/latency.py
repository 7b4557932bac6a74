"""Measured latency: the seconds of each request, as a client waiting for it sees them.

:func:`request_latencies_s` keeps every request's time, tail included, for
``lab_utils.routing.Route`` (``timing.measure`` reports medians of blocks of calls instead).
torch loads only when a device is synchronized (``lab_utils.machine``).
"""

from __future__ import annotations

import time

from lab_utils import checks, machine

__all__ = ["request_latencies_s"]


def request_latencies_s(
    fn, *, requests: int = 100, device=None, warmup: int = 3, max_seconds: float = 1.0
) -> tuple[float, ...]:
    """Seconds of each of up to ``requests`` calls of ``fn()``, timed one by one.

    Each call is a request a client waits for: the clock reads after ``device`` (None:
    ``machine.pick_device()``) is synchronized, so queued GPU work counts. ``warmup`` calls run
    first, untimed; timing stops after ``max_seconds`` (at least one request is timed). Unlike
    ``timing.measure``, which reports the median of blocks of calls, this keeps every request's
    time, tail included.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable with no arguments, got {type(fn).__name__}")
    requests = checks.count("requests", requests, minimum=1)
    warmup = checks.count("warmup", warmup, minimum=0)
    max_seconds = checks.number("max_seconds", max_seconds)
    device = machine.as_device(device)
    for _ in range(warmup):
        fn()
    machine.synchronize(device)
    latencies: list[float] = []
    deadline = time.perf_counter() + max_seconds
    while len(latencies) < requests and (not latencies or time.perf_counter() < deadline):
        start = time.perf_counter()
        fn()
        machine.synchronize(device)
        latencies.append(time.perf_counter() - start)
    return tuple(latencies)
