"""A real, tiny fine-tune: a byte-level corpus made in code, and full or LoRA training of
:class:`lab_utils.models.TinyGPT` with its loss curve, tokens/s and counted FLOPs.

No downloads: the two corpora are generated from a seed. ``general`` is plain sentences (the
"pre-training" text); ``domain`` is order-desk log lines with their own words and layout (what a
fine-tune adapts the model to). torch is imported inside the functions that run tensors.
"""

from __future__ import annotations

import copy
import random
import timeit
from dataclasses import dataclass

from lab_utils import checks, machine

CORPORA = ("general", "domain")
METHODS = ("full", "lora")

_SUBJECTS = (
    "the cat",
    "a small dog",
    "my friend",
    "the teacher",
    "an old man",
    "the children",
    "a red bird",
    "the farmer",
    "our neighbour",
    "the baker",
)
_VERBS = ("sees", "finds", "likes", "carries", "paints", "follows", "hears", "helps", "visits", "draws")
_OBJECTS = (
    "the river",
    "a green apple",
    "the tall tree",
    "a wooden box",
    "the quiet town",
    "a blue kite",
    "the warm bread",
    "a long letter",
    "the north road",
    "a yellow hat",
)
_ENDINGS = ("", " in the morning", " after lunch", " near the sea", " every day", " with care")
_ITEMS = ("cable", "adapter", "keyboard", "monitor", "charger", "headset", "mouse", "dock")
_STATUSES = ("shipped", "packed", "delayed", "delivered", "returned")
_CITIES = ("Oslo", "Lima", "Pune", "Perth", "Quito", "Turin", "Lagos", "Osaka")


def _general_line(rng: random.Random) -> str:
    return f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)}{rng.choice(_ENDINGS)}.\n"


def _domain_line(rng: random.Random) -> str:
    count = rng.randint(1, 9)
    unit_price = rng.choice((4, 9, 12, 15, 25, 40))
    return (
        f"order {rng.randint(1000, 9999)}: {count} x {rng.choice(_ITEMS)} to {rng.choice(_CITIES)}, "
        f"{count * unit_price} usd, {rng.choice(_STATUSES)}\n"
    )


def corpus(kind: str = "domain", n_bytes: int = 65_536, seed: int = 0) -> bytes:
    """``n_bytes`` of ASCII text of one ``kind`` ("general" sentences or "domain" order lines).

    The same ``kind``, ``n_bytes`` and ``seed`` always give the same bytes; another seed gives
    held-out text of the same kind.
    """
    checks.choice("kind", kind, CORPORA)
    checks.count("n_bytes", n_bytes, minimum=2)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__} {seed!r}")
    rng = random.Random(f"{kind}-{seed}")
    make_line = _general_line if kind == "general" else _domain_line
    parts, size = [], 0
    while size < n_bytes:
        line = make_line(rng)
        parts.append(line)
        size += len(line)
    return "".join(parts).encode("ascii")[:n_bytes]


def _windows(data, starts, seq_len: int):
    """Rows of ``seq_len + 1`` consecutive tokens of ``data`` beginning at each of ``starts``."""
    import torch

    return data[starts[:, None] + torch.arange(seq_len + 1, device=data.device)]


def _loss(model, window):
    """Next-token cross-entropy of ``model`` on a (batch, seq_len + 1) window of token ids."""
    import torch.nn.functional as F

    logits = model(window[:, :-1])
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), window[:, 1:].reshape(-1))


def _as_tokens(text: bytes, seq_len: int, device, what: str):
    import torch

    if not isinstance(text, (bytes, bytearray)):
        raise TypeError(f"{what} must be bytes (see corpus()), got {type(text).__name__}")
    if len(text) < seq_len + 2:
        raise ValueError(f"{what} holds {len(text)} bytes; it needs at least seq_len + 2 = {seq_len + 2}")
    return torch.frombuffer(bytearray(text), dtype=torch.uint8).to(device=device, dtype=torch.long)


def evaluate_loss(
    model, text: bytes, *, batch: int = 32, n_batches: int = 2, seed: int = 1, device=None
) -> float:
    """Mean next-token cross-entropy (nats per byte) of ``model`` on random windows of ``text``."""
    import torch

    device = machine.as_device(device)
    for name, value in (("batch", batch), ("n_batches", n_batches)):
        checks.count(name, value)
    seq_len = model.config.seq_len
    data = _as_tokens(text, seq_len, device, "text")
    generator = torch.Generator().manual_seed(seed)
    starts = torch.randint(len(data) - seq_len - 1, (n_batches, batch), generator=generator).to(device)
    was_training = model.training
    model.eval()
    with torch.no_grad():
        total = sum(_loss(model, _windows(data, row, seq_len)) for row in starts)
    model.train(was_training)
    return float(total) / n_batches


@dataclass(frozen=True)
class FineTuneResult:
    """One training run. Losses in nats per byte; times in seconds; FLOPs counted, not estimated.

    ``losses`` holds the training loss of every step. ``flops_per_step`` is what
    ``torch.utils.flop_counter.FlopCounterMode`` counted for the first step's forward and
    backward. Timing covers the steps after ``warmup_steps``, with the device synchronized
    before each clock read. ``model`` is the trained copy (the model passed in is untouched).
    """

    method: str
    device: str
    steps: int
    batch: int
    seq_len: int
    losses: tuple[float, ...]
    eval_loss_before: float
    eval_loss_after: float
    trainable_params: int
    total_params: int
    flops_per_step: int
    timed_steps: int
    timed_seconds: float
    model: object

    @property
    def tokens_per_step(self) -> int:
        return self.batch * self.seq_len

    @property
    def tokens_per_s(self) -> float:
        """Training throughput over the timed steps (measured, synchronized)."""
        return self.timed_steps * self.tokens_per_step / self.timed_seconds

    @property
    def flops_per_token(self) -> float:
        """Counted FLOPs of one training step (forward + backward) per token."""
        return self.flops_per_step / self.tokens_per_step

    @property
    def achieved_flops_per_s(self) -> float:
        """Model FLOP/s reached: counted FLOPs per token x measured tokens/s."""
        return self.flops_per_token * self.tokens_per_s


def _counted_step(model, window):
    """Forward + backward of the loss under FlopCounterMode: (loss, counted FLOPs)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:  # display=True would need `tabulate`
        loss = _loss(model, window)
        loss.backward()
    return loss, int(counter.get_total_flops())


def count_step_flops(model, window) -> int:
    """FLOPs of one forward + backward of the next-token loss on ``window`` (a (batch,
    seq_len + 1) tensor of token ids), counted by ``torch.utils.flop_counter.FlopCounterMode``:
    matrix products only, no norms, softmax or element-wise work. Leaves gradients behind."""
    return _counted_step(model, window)[1]


def fine_tune(
    model,
    text: bytes,
    *,
    method: str = "full",
    steps: int = 60,
    batch: int = 16,
    lr: float = 3e-3,
    rank: int = 4,
    alpha: float = 8.0,
    seed: int = 0,
    warmup_steps: int = 2,
    max_seconds: float | None = None,
    eval_text: bytes | None = None,
    device=None,
) -> FineTuneResult:
    """Train a copy of ``model`` (a TinyGPT) on ``text`` with AdamW, in full or with LoRA.

    ``method="full"`` trains every parameter (about 6·N FLOPs per token); ``"lora"`` freezes
    them and trains rank-``rank`` adapters on the attention and MLP linears (about 4·N: frozen
    weights get no weight gradients). ``seed`` fixes the adapters' start and the batches.
    ``max_seconds`` stops early once that much training time has passed. The loss on
    ``eval_text`` (held-out text; default ``text``) is measured before and after.
    """
    import torch

    from lab_utils import models

    if not isinstance(model, models.TinyGPT):
        raise TypeError(f"model must be a lab_utils.models.TinyGPT, got {type(model).__name__}")
    checks.choice("method", method, METHODS)
    for name, value in (("steps", steps), ("batch", batch)):
        checks.count(name, value)
    if checks.count("warmup_steps", warmup_steps) >= steps:
        raise ValueError(
            f"warmup_steps={warmup_steps!r}: must be an integer from 1 to steps - 1 = {steps - 1}"
        )
    checks.number("lr", lr)
    if max_seconds is not None:
        checks.number("max_seconds", max_seconds)
    device = machine.as_device(device)
    seq_len = model.config.seq_len
    data = _as_tokens(text, seq_len, device, "text")
    eval_text = text if eval_text is None else eval_text

    torch.manual_seed(seed)
    model = copy.deepcopy(model).to(device)
    if method == "lora":
        models.apply_lora(model, rank=rank, alpha=alpha)
    eval_loss_before = evaluate_loss(model, eval_text, device=device)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=lr)
    generator = torch.Generator().manual_seed(seed)
    starts = torch.randint(len(data) - seq_len - 1, (steps, batch), generator=generator).to(device)

    model.train()
    losses = []
    flops_per_step = 0
    started = None
    done = steps
    for step in range(steps):
        if step == warmup_steps:
            machine.synchronize(device)
            started = timeit.default_timer()
        window = _windows(data, starts[step], seq_len)
        optimizer.zero_grad(set_to_none=True)
        if step == 0:
            loss, flops_per_step = _counted_step(model, window)
        else:
            loss = _loss(model, window)
            loss.backward()
        optimizer.step()
        losses.append(loss.detach())
        if started is not None and max_seconds is not None and step + 1 < steps:
            if timeit.default_timer() - started > max_seconds:
                done = step + 1
                break
    machine.synchronize(device)
    timed_seconds = timeit.default_timer() - started
    return FineTuneResult(
        method=method,
        device=str(device),
        steps=done,
        batch=batch,
        seq_len=seq_len,
        losses=tuple(torch.stack(losses).tolist()),
        eval_loss_before=eval_loss_before,
        eval_loss_after=evaluate_loss(model, eval_text, device=device),
        trainable_params=sum(p.numel() for p in trainable),
        total_params=sum(p.numel() for p in model.parameters()),
        flops_per_step=flops_per_step,
        timed_steps=done - warmup_steps,
        timed_seconds=timed_seconds,
        model=model,
    )
