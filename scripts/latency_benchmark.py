"""Time `lab-utils latency` on the issue's job: a 10-minute trace at 10 requests/s (about 6,000
requests), Llama-3.1-8B on one H100, 1,000 tokens in and 200 out. A benchmark, not a test: it
prints wall and CPU seconds of the whole command (Python start and imports included) and of
the simulation alone.

    python scripts/latency_benchmark.py
"""

from __future__ import annotations

import subprocess
import sys
import time

ARGS = ["latency", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "10"]
ARGS += ["--prompt-len", "1000", "--output-len", "200", "--json"]


def main() -> None:
    from lab_utils import replica

    wall, cpu = time.perf_counter(), time.process_time()
    result = replica.at_rate(
        "Llama-3.1-8B", device="H100 SXM", rate_per_s=10, prompt_len=1000, output_len=200
    )
    print(
        f"simulation alone: {len(result.requests):,} requests, {result.steps:,} steps in "
        f"{time.perf_counter() - wall:.2f} s wall, {time.process_time() - cpu:.2f} s CPU"
    )
    before = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "lab_utils", *ARGS], capture_output=True, text=True, check=True
    )
    children = __import__("resource").getrusage(__import__("resource").RUSAGE_CHILDREN)
    print(
        f"lab-utils latency (the whole command): {time.perf_counter() - before:.2f} s wall, "
        f"{children.ru_utime + children.ru_stime:.2f} s CPU"
    )
    print(run.stdout)


if __name__ == "__main__":
    main()
