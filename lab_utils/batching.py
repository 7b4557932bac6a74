"""A small continuous-batching server in torch, measured: the course's tiny GPT serving requests as
they arrive, with the clock (imports torch inside its functions).

:func:`serve` runs the loop an engine runs, in miniature. Each step either prefills the prompts
that have arrived (whole, up to ``max_num_seqs`` running: chunked prefill off) or, when none
waits, decodes one token for every running sequence in one batched call: the KV cache is a slot
per sequence (a simple version of vLLM's block manager), read and written once per layer for
the whole batch, the positions past each sequence's length masked. A finished sequence frees its
place at once. Each request's time to first token, time per output token and end-to-end latency
are read from the clock (``time.perf_counter``), after the device is synchronized, as a client
would see them.
:func:`step_times_s` times the two kinds of step alone, for the simulator's prediction
(``lab_utils.replica``), :func:`measured_engine` turns them into an engine profile and
:func:`this_machine` measures the roofs the bounds need. Greedy decoding; a request's tokens
are random ids (the timing does not depend on them).
"""

from __future__ import annotations

import math
import time

from lab_utils import checks, engines, hardware, machine, replica, serverless

__all__ = ["measured_engine", "serve", "step_times_s", "this_machine"]


class _Slots:
    """The KV cache as ``max_num_seqs`` slots of the model's longest context, one per running
    sequence (a simple version of vLLM's block manager): one batched read and one batched write
    per layer and step, whatever the batch."""

    def __init__(self, model, n_slots: int, device):
        import torch

        config = model.config
        shape = (n_slots, config.n_layers, config.n_heads, config.seq_len, config.hidden // config.n_heads)
        self.keys = torch.zeros(shape, device=device)
        self.values = torch.zeros(shape, device=device)
        self.free = list(range(n_slots))

    def fill(self, slot: int, cache) -> None:
        """Store a prefill's cache (one (k, v) of shape (1, heads, prompt, head_dim) per block)."""
        for layer, (k, v) in enumerate(cache):
            self.keys[slot, layer, :, : k.shape[2]] = k[0]
            self.values[slot, layer, :, : v.shape[2]] = v[0]


def _decode(model, tokens, slots: _Slots, rows, lengths):
    """One decode step of sequences in the slots ``rows`` (a tensor) whose caches hold
    ``lengths`` tokens (a tensor): ``tokens`` (batch, 1) are their newest tokens. Writes each
    new key and value into its slot and returns the next tokens (batch, 1)."""
    import torch

    batch, device = tokens.shape[0], tokens.device
    x = model.token_embedding(tokens) + model.position_embedding(lengths.unsqueeze(1))
    longest = int(lengths.max()) + 1
    visible = torch.arange(longest, device=device)[None, :] <= lengths[:, None]  # (batch, longest)
    for layer, block in enumerate(model.blocks):
        attention, hidden = block.attention, x.shape[-1]
        heads, head_dim = attention.n_heads, hidden // attention.n_heads
        q, k, v = (
            t.view(batch, 1, heads, head_dim).transpose(1, 2)
            for t in attention.qkv(block.norm1(x)).split(hidden, dim=2)
        )
        slots.keys[rows, layer, :, lengths] = k[:, :, 0]
        slots.values[rows, layer, :, lengths] = v[:, :, 0]
        keys = slots.keys[rows, layer, :, :longest]
        values = slots.values[rows, layer, :, :longest]
        scores = (q @ keys.transpose(-2, -1)) / math.sqrt(head_dim)
        scores = scores.masked_fill(~visible[:, None, None, :], float("-inf"))
        out = (torch.softmax(scores, dim=-1) @ values).transpose(1, 2).reshape(batch, 1, hidden)
        x = x + attention.proj(out)
        x = x + block.mlp(block.norm2(x))
    logits = model.norm(x[:, -1]) @ model.token_embedding.weight.T
    return logits.argmax(dim=-1, keepdim=True)


def serve(model, requests, *, device=None, max_num_seqs: int = 8) -> replica.ReplicaResult:
    """Serve ``requests`` ((arrival_s, prompt_tokens, output_tokens) each, arrivals in seconds
    from the start) with ``model`` (a ``models.TinyGPT``) on ``device`` (None:
    ``machine.pick_device()``), at most ``max_num_seqs`` sequences at once. Returns the measured
    times in the simulator's result type (:class:`replica.ReplicaResult`; no price, engine
    "measured here")."""
    import torch

    device = machine.as_device(device)
    model = model.to(device).eval()
    max_num_seqs = checks.count("max_num_seqs", max_num_seqs)
    requests = [
        (checks.number("arrival_s", a, strict=False), checks.count("prompt", p), checks.count("output", q))
        for a, p, q in checks.sequence("requests", requests)
    ]
    pending = sorted((a, p, q, i) for i, (a, p, q) in enumerate(requests))
    if not pending:
        raise ValueError("requests is empty: give at least one (arrival_s, prompt_tokens, output_tokens)")
    if max(p + q for _, p, q, _ in pending) > model.config.seq_len:
        raise ValueError(f"a request's prompt + output exceeds the model's seq_len={model.config.seq_len}")
    generator = torch.Generator().manual_seed(0)
    slots = _Slots(model, max_num_seqs, device)
    first, finish, started = {}, {}, {}
    running: list[dict] = []  # index, slot, token (1, 1), length, left
    waiting: list[tuple] = []
    steps = 0
    with torch.no_grad():
        start = time.perf_counter()
        while pending or waiting or running:
            now = time.perf_counter() - start
            while pending and pending[0][0] <= now:
                waiting.append(pending.pop(0))
            if not running and not waiting:
                time.sleep(max(0.0, pending[0][0] - now))
                continue
            if waiting and slots.free:  # a prefill step: the decodes wait
                admitted = []
                while waiting and slots.free:
                    _, prompt, output, index = waiting.pop(0)
                    started[index] = time.perf_counter() - start
                    tokens = torch.randint(0, model.config.vocab_size, (1, prompt), generator=generator)
                    logits, cache = model.prefill(tokens.to(device))
                    slot = slots.free.pop()
                    slots.fill(slot, cache)
                    token = logits.argmax(dim=-1, keepdim=True)
                    admitted.append(dict(index=index, slot=slot, token=token, length=prompt, left=output - 1))
                machine.synchronize(device)
                clock = time.perf_counter() - start
                for sequence in admitted:
                    first[sequence["index"]] = clock
                running += admitted
            else:
                rows = torch.tensor([s["slot"] for s in running], device=device)
                lengths = torch.tensor([s["length"] for s in running], device=device)
                tokens = torch.cat([s["token"] for s in running])
                following = _decode(model, tokens, slots, rows, lengths)
                machine.synchronize(device)
                clock = time.perf_counter() - start
                for i, sequence in enumerate(running):
                    sequence["token"], sequence["length"] = following[i : i + 1], sequence["length"] + 1
                    sequence["left"] -= 1
            steps += 1
            for sequence in [s for s in running if s["left"] <= 0]:
                finish[sequence["index"]] = clock
                slots.free.append(sequence["slot"])
                running.remove(sequence)
    times = tuple(
        replica.RequestTimes(
            arrival_s=arrival,
            prompt_tokens=prompt,
            output_tokens=output,
            ttft_s=first[i] - arrival,
            e2e_s=finish[i] - arrival,
            queue_s=started[i] - arrival,
            tpot_s=(finish[i] - first[i]) / (output - 1) if output > 1 else 0.0,
            preemptions=0,
        )
        for i, (arrival, prompt, output) in enumerate(requests)
    )
    return replica.summarize(times, model="tiny GPT", device=str(device), engine="measured here", steps=steps)


def step_times_s(
    model, *, prompt_tokens: int, batches=(1, 2, 4, 8), context: int = 32, device=None, repeats=5
):
    """Median seconds of one prefill of ``prompt_tokens`` and of one decode step at each batch in
    ``batches`` (sequences at ``context`` tokens), measured here: {"prefill": s, batch: s, ...}."""
    import torch

    device = machine.as_device(device)
    model = model.to(device).eval()
    tokens = torch.randint(0, model.config.vocab_size, (1, prompt_tokens)).to(device)

    def timed(fn):
        fn()
        samples = []
        for _ in range(checks.count("repeats", repeats)):
            begin = time.perf_counter()
            fn()
            machine.synchronize(device)
            samples.append(time.perf_counter() - begin)
        return serverless.percentile(samples, 50)

    with torch.no_grad():
        found = {"prefill": timed(lambda: model.prefill(tokens))}
        _, cache = model.prefill(torch.randint(0, model.config.vocab_size, (1, context)).to(device))
        for batch in batches:
            slots = _Slots(model, batch, device)
            for slot in range(batch):
                slots.fill(slot, cache)
            rows = torch.arange(batch, device=device)
            lengths = torch.full((batch,), context, device=device)
            step_tokens = torch.zeros(batch, 1, dtype=torch.long, device=device)
            found[batch] = timed(lambda t=step_tokens, s=slots, r=rows, n=lengths: _decode(model, t, s, r, n))
    return found


def measured_engine(step_times: dict) -> engines.Profile:
    """An engine profile from :func:`step_times_s`: every step costs at least the measured decode
    step at batch 1 (``per_step_s``: Python, the framework and kernel launches, which dwarf a tiny
    model's arithmetic), and the bounds at full efficiency beyond it."""
    per_step_s = checks.number("step_times[1]", step_times[1])
    return engines.Profile(
        name="measured here",
        aliases=(),
        description="the tiny GPT's continuous-batching loop (lab_utils.batching) on this machine",
        decode_efficiency={32: 1.0, 16: 1.0},
        prefill_efficiency=1.0,
        per_request_s=0.0,
        per_step_s=per_step_s,
        unsourced=(),
        title="measured here (lab_utils.batching.step_times_s)",
        source="this machine",
        source_date="2026-12",
        url=None,
        cite=None,
        derived=f"the median decode step at batch 1, {per_step_s * 1e3:.3f} ms, measured here",
    )


def this_machine(device=None, *, min_run_time: float = 0.05) -> hardware.Spec:
    """``device`` (None: ``machine.pick_device()``) as a catalog-like spec whose roofs are
    measured here: a 512 x 512 fp32 matrix product's FLOP/s and a 16 MB copy's bytes/s
    (``lab_utils.bench``), quickly (``min_run_time`` each)."""
    import torch

    from lab_utils import bench

    device = machine.as_device(device)
    a = torch.randn(512, 512, device=device)
    flops = bench.measure_matmul(a, a.clone(), min_run_time=min_run_time).flops_per_s
    src = torch.empty(4_000_000, device=device)
    copy = bench.measure_copy(src, torch.empty_like(src), min_run_time=min_run_time).bytes_per_s
    return hardware.Spec(
        name=f"this machine ({device.type}, measured here)",
        kind="gpu" if device.type == "cuda" else "cpu",
        bandwidth_bytes_per_s=copy,
        peak_flops={"fp32": flops},
        source="measured here",
        source_date="2026-12",
    )
