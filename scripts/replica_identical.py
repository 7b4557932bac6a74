"""Check that the replica simulator of this checkout answers exactly as another checkout's does
(say ``main``'s, before a change meant to make it faster): the same per-request times, steps,
preemptions, percentiles and notes, compared as ``repr`` (every float to its last bit).

It runs a sample of varied jobs (dense, mixture-of-experts and sliding-window models; H100, A100,
L4, T4 and a CPU; light and heavy Poisson rates and closed loops; chunked prefill on and off,
a prefix hit, fp8 KV, a small KV cache that preempts, speculative decoding by n-gram and by a
draft model), the advisor's ``serve`` answers and ``lab-utils latency --json``, once with each
checkout on ``PYTHONPATH`` in a fresh process, and lists every job whose answer differs.

    python scripts/replica_identical.py /work/main          # exit 1 when any answer differs
    python scripts/replica_identical.py /work/main --store main.json   # keep main's answers
    python scripts/replica_identical.py main.json           # compare with answers kept

A check for a change, not a test: it takes a minute or two.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# (model, device, n_devices, precision, light rate, heavy rate, prompt tokens, output tokens)
BASES = [
    ("Llama-3.1-8B", "H100 SXM", 1, None, 0.5, 40.0, 500, 200),
    ("Llama-3.1-8B", "L4", 1, None, 0.1, 3.0, 1000, 100),
    ("Qwen2.5-1.5B", "T4", 1, None, 0.2, 8.0, 300, 300),
    ("Llama-3.2-3B", "T4", 1, "int4", 0.1, 4.0, 800, 150),
    ("Qwen2.5-0.5B", "Intel Xeon Platinum 8480+", 1, None, 0.05, 2.0, 200, 100),
    ("Qwen3-30B-A3B", "H100 SXM", 1, "fp8", 0.5, 30.0, 700, 250),
    ("gpt-oss-20b", "H100 SXM", 1, None, 0.5, 40.0, 400, 300),
    ("gpt-oss-20b", "H200 SXM", 1, None, 0.2, 5.0, 200, 200),
    ("Llama-3.1-70B", "T4", 1, None, 0.1, 1.0, 100, 100),  # no room: an error
    ("Gemma-3-27B", "H100 SXM", 1, None, 0.3, 12.0, 3000, 150),
    ("Llama-3.1-70B", "H100 SXM", 4, None, 0.3, 15.0, 1200, 200),
    ("Mixtral-8x7B", "A100 80GB SXM", 2, None, 0.2, 6.0, 600, 120),
]
LEVERS = [
    {"chunked_prefill": False},
    {"prefix_hit": 0.5},
    {"spec_tokens": 3, "spec_acceptance": 0.6},
    {"spec_tokens": 4, "spec_acceptance": 0.75, "spec_draft_model": "Llama-3.2-1B"},
    {"kv_bytes_per_value": 1},
    {"kv_cache_tokens": 6000, "max_num_seqs": 16, "max_num_batched_tokens": 2048},
    {"chunked_prefill": False, "prefix_hit": 0.3, "spec_tokens": 2, "spec_acceptance": 0.5},
]


def jobs() -> list[tuple[str, dict]]:
    """(kind, keywords) of each job: three loads per base with the defaults, then the levers in
    turn on each base's heavy load and closed loop."""
    made = []
    for i, (model, device, n, precision, light, heavy, prompt, output) in enumerate(BASES):
        shape = dict(model=model, device=device, n_devices=n, precision=precision)
        shape.update(prompt_len=prompt, output_len=output, n_requests=150)
        made.append(("rate", {**shape, "rate_per_s": light}))
        made.append(("rate", {**shape, "rate_per_s": heavy, "seed": i}))
        made.append(("concurrency", {**shape, "concurrency": 4 + 6 * i}))
        for j in (i, i + 3):
            levers = LEVERS[j % len(LEVERS)]
            made.append(("rate", {**shape, "rate_per_s": heavy, **levers}))
            made.append(("concurrency", {**shape, "concurrency": 24, **levers}))
    return made


def answers() -> dict:
    """{job: repr of its answer (or of its error)} for the checkout on ``sys.path``."""
    from lab_utils import advisor, replica
    from lab_utils.cli import main

    found = {}
    for kind, keywords in jobs():
        keywords = dict(keywords)
        run = replica.at_rate if kind == "rate" else replica.at_concurrency
        try:
            found[f"{kind} {keywords}"] = repr(run(keywords.pop("model"), **keywords))
        except (ValueError, TypeError) as error:
            found[f"{kind} {keywords}"] = f"error: {error}"
    for model, per_day in [("llama-3.1-8b", 1e3), ("llama-3.1-8b", 1e5), ("llama-3.1-8b", 1e6)]:
        found[f"serve {model} {per_day:g}"] = repr(advisor.serve(model, requests_per_day=per_day))
    found["serve qwen3-30b-a3b 1e5"] = repr(advisor.serve("qwen3-30b-a3b", requests_per_day=1e5))
    args = "latency --model llama-3.1-8b --gpu h100-sxm --rate 10 --prompt-len 500 --output-len 200 --json"
    with tempfile.TemporaryFile("w+") as out:
        stdout, sys.stdout = sys.stdout, out
        try:
            main(args.split())
        finally:
            sys.stdout = stdout
        out.seek(0)
        found[args] = out.read()
    return found


def answers_of(checkout: Path) -> dict:
    """:func:`answers` of ``checkout``'s lab_utils, computed in a fresh process."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        code = f"import sys; sys.path.insert(0, {str(ROOT / 'scripts')!r}); import replica_identical as r; "
        code += f"import json; json.dump(r.answers(), open({out.name!r}, 'w'))"
        subprocess.run([sys.executable, "-c", code], env=env, cwd=checkout, check=True)
        return json.loads(Path(out.name).read_text())


def main() -> int:
    base = Path(sys.argv[1] if len(sys.argv) > 1 else "/work/main").resolve()
    before = json.loads(base.read_text()) if base.is_file() else answers_of(base)
    if "--store" in sys.argv:
        Path(sys.argv[sys.argv.index("--store") + 1]).write_text(json.dumps(before))
    after = answers_of(ROOT)
    differ = [job for job in before if before[job] != after.get(job)]
    errors = sum(answer.startswith("error") for answer in before.values())
    print(f"{len(before)} jobs ({errors} answered with an error), {len(differ)} differ from {base}")
    for job in differ:
        print(f"DIFFERS: {job}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
