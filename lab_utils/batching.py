"""A small continuous-batching server in torch, measured: the course's tiny GPT serving requests as
they arrive, with the clock (imports torch inside its functions).

:func:`serve` runs the loop an engine runs, in miniature. Each step either prefills the prompts
that have arrived (whole, up to ``max_num_seqs`` running: chunked prefill off) or, when none
waits, decodes one token for every running sequence in one batched call, their KV caches padded
to the longest and masked. A finished sequence frees its place at once. Each request's time to
first token, time per output token and end-to-end latency are read from the clock
(``time.perf_counter``), after the device is synchronized, as a client would see them.
:func:`step_times_s` times the two kinds of step alone, for the simulator's prediction
(``lab_utils.replica``). Greedy decoding; a request's tokens are random ids (the timing does not
depend on them).
"""

from __future__ import annotations

import math
import time

from lab_utils import checks, machine, replica, serverless

__all__ = ["serve", "step_times_s"]


def _decode(model, tokens, caches, lengths):
    """One decode step of sequences whose caches differ in length: ``tokens`` (batch, 1),
    ``caches[i]`` one (k, v) per block of shape (1, heads, lengths[i], head_dim). Returns the
    next tokens (batch,) and the caches one position longer."""
    import torch

    batch, longest = len(caches), max(lengths)
    device = tokens.device
    positions = torch.tensor(lengths, device=device).unsqueeze(1)
    x = model.token_embedding(tokens) + model.position_embedding(positions)
    visible = torch.arange(longest + 1, device=device)[None, :] <= positions  # (batch, longest + 1)
    grown = [[] for _ in range(batch)]
    for layer, block in enumerate(model.blocks):
        attention, hidden = block.attention, x.shape[-1]
        heads, head_dim = attention.n_heads, hidden // attention.n_heads
        q, k, v = (
            t.view(batch, 1, heads, head_dim).transpose(1, 2)
            for t in attention.qkv(block.norm1(x)).split(hidden, dim=2)
        )
        keys = torch.zeros(batch, heads, longest + 1, head_dim, device=device)
        values = torch.zeros_like(keys)
        for i, cache in enumerate(caches):
            n = lengths[i]
            keys[i, :, :n], values[i, :, :n] = cache[layer][0][0], cache[layer][1][0]
            keys[i, :, n], values[i, :, n] = k[i, :, 0], v[i, :, 0]
            grown[i].append((keys[i : i + 1, :, : n + 1], values[i : i + 1, :, : n + 1]))
        scores = (q @ keys.transpose(-2, -1)) / math.sqrt(head_dim)
        scores = scores.masked_fill(~visible[:, None, None, :], float("-inf"))
        out = (torch.softmax(scores, dim=-1) @ values).transpose(1, 2).reshape(batch, 1, hidden)
        x = x + attention.proj(out)
        x = x + block.mlp(block.norm2(x))
    logits = model.norm(x[:, -1]) @ model.token_embedding.weight.T
    return logits.argmax(dim=-1), grown


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
    first, finish, started = {}, {}, {}
    running: list[dict] = []
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
            admitted = []
            while waiting and len(running) + len(admitted) < max_num_seqs:
                admitted.append(waiting.pop(0))
            if admitted:  # a prefill step: the decodes wait
                for _, prompt, output, index in admitted:
                    started[index] = time.perf_counter() - start
                    tokens = torch.randint(0, model.config.vocab_size, (1, prompt), generator=generator)
                    logits, cache = model.prefill(tokens.to(device))
                    running.append(
                        dict(
                            index=index,
                            token=logits.argmax(dim=-1),
                            cache=cache,
                            length=prompt,
                            left=output - 1,
                        )
                    )
                machine.synchronize(device)
                clock = time.perf_counter() - start
                for sequence in running[-len(admitted) :]:
                    first[sequence["index"]] = clock
            else:
                tokens = torch.stack([s["token"] for s in running])
                following, caches = _decode(
                    model, tokens, [s["cache"] for s in running], [s["length"] for s in running]
                )
                machine.synchronize(device)
                clock = time.perf_counter() - start
                for i, sequence in enumerate(running):
                    sequence.update(
                        token=following[i : i + 1], cache=caches[i], length=sequence["length"] + 1
                    )
                    sequence["left"] -= 1
            steps += 1
            for sequence in [s for s in running if s["left"] <= 0]:
                finish[sequence["index"]] = clock
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
            step_tokens = torch.zeros(batch, 1, dtype=torch.long, device=device)
            found[batch] = timed(lambda t=step_tokens, n=batch: _decode(model, t, [cache] * n, [context] * n))
    return found
