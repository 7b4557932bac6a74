"""Time the replica simulator on the jobs that wait on it. A benchmark, not a test: it prints wall
and CPU seconds (say how busy the machine was: ``uptime``).

1. ``lab-utils latency`` on issue 38's job, a 10-minute trace at 10 requests/s (about 6,000
   requests), Llama-3.1-8B on one H100, 500 tokens in and 200 out: the simulation alone, then
   the whole command (Python start and imports included).
2. ``pick serve``'s simulations: the ``replica.at_rate`` runs ``advisor.serve`` asks for at
   ``--per-day`` requests a day (each option's one-request run, then its 100-request run),
   replayed in a fresh process as the advisor runs them, then again (step times kept), per
   option; and the whole ``advisor.serve`` call.

    python scripts/latency_benchmark.py [--per-day 100000]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time

ARGS = ["latency", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "10"]
ARGS += ["--prompt-len", "500", "--output-len", "200", "--json"]


def _timed(work) -> tuple[float, float]:
    """(wall, CPU) seconds of ``work()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - wall, time.process_time() - cpu


def latency_command() -> None:
    from lab_utils import replica

    found = {}
    wall, cpu = _timed(
        lambda: found.setdefault(
            "result",
            replica.at_rate("Llama-3.1-8B", device="H100 SXM", rate_per_s=10, prompt_len=500, output_len=200),
        )
    )
    result = found["result"]
    print(
        f"simulation alone: {len(result.requests):,} requests, {result.steps:,} steps in "
        f"{wall:.2f} s wall, {cpu:.2f} s CPU"
    )
    before = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "lab_utils", *ARGS], capture_output=True, text=True, check=True
    )
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        f"lab-utils latency (the whole command): {time.perf_counter() - before:.2f} s wall, "
        f"{children.ru_utime + children.ru_stime:.2f} s CPU"
    )
    print(run.stdout)


def advisor_simulations(per_day: float) -> None:
    from lab_utils import advisor, replica

    calls, at_rate = [], replica.at_rate

    def kept(model, **job):
        calls.append((model, job))
        return at_rate(model, **job)

    replica.at_rate = kept
    try:
        advisor.serve("llama-3.1-8b", requests_per_day=per_day)
    finally:
        replica.at_rate = at_rate
    jobs = sum(1 for _, job in calls if job.get("n_requests") != 1)
    print(f"advisor.serve at {per_day:,.0f} requests a day: {len(calls)} simulations, {jobs} of 100 requests")
    for label in ("as the advisor runs them", "again, step times kept"):
        wall, cpu = _timed(lambda: [at_rate(model, **job) for model, job in calls])
        print(f"  {label}: {wall / jobs * 1e3:.2f} ms wall, {cpu / jobs * 1e3:.2f} ms CPU per option")
    wall, cpu = _timed(lambda: advisor.serve("llama-3.1-8b", requests_per_day=per_day))
    print(f"  advisor.serve again, whole: {wall:.2f} s wall, {cpu:.2f} s CPU")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-day", type=float, default=1e5, help="requests a day for pick serve")
    args = parser.parse_args()
    latency_command()
    advisor_simulations(args.per_day)


if __name__ == "__main__":
    main()
