"""The course's serverless worker: a tiny GPT that completes text, for the Runpod SDK.

Start-up (the cold start) builds the model once; each job then only runs it. Run it:

    python handler.py --test_input '{"input": {"prompt": "Hello", "max_new_tokens": 8}}'
    python handler.py --rp_serve_api --rp_api_host 127.0.0.1 --rp_api_port 8000

A job's input: {"prompt": str (1-2000 characters), "max_new_tokens": int (1-64, default 16)}.
Bad input gets {"error": "..."} (the SDK marks the job FAILED), never a crash. The weights are
random unless MODEL_PATH names a state dict saved from the same configuration (a deployment
keeps it on the template's volume); the point here is the cost of serving, not good text.
"""

from __future__ import annotations

import functools
import os
import time

MAX_PROMPT_CHARS = 2000
MAX_NEW_TOKENS = 64
DEFAULT_NEW_TOKENS = 16


@functools.cache
def load_model():
    """Build the model once per worker process: this is what a cold start pays for."""
    import torch

    from lab_utils import machine, models

    config = models.GPTConfig()  # byte-level: any text is valid input
    torch.manual_seed(0)
    model = models.TinyGPT(config)
    if os.environ.get("MODEL_PATH"):
        model.load_state_dict(torch.load(os.environ["MODEL_PATH"], map_location="cpu"))
    device = machine.pick_device()
    return model.to(device).eval(), device


def validate(job_input) -> tuple[str, int]:
    """(prompt, max_new_tokens) from a job's input; ValueError saying what is wrong."""
    if not isinstance(job_input, dict):
        raise ValueError(f"input must be a JSON object, got {type(job_input).__name__}")
    unknown = sorted(set(job_input) - {"prompt", "max_new_tokens"})
    if unknown:
        raise ValueError(f"unknown input field(s) {unknown}; allowed: prompt, max_new_tokens")
    prompt = job_input.get("prompt")
    if not isinstance(prompt, str) or not 1 <= len(prompt) <= MAX_PROMPT_CHARS:
        raise ValueError(f"prompt must be a string of 1 to {MAX_PROMPT_CHARS} characters")
    max_new_tokens = job_input.get("max_new_tokens", DEFAULT_NEW_TOKENS)
    if (
        isinstance(max_new_tokens, bool)
        or not isinstance(max_new_tokens, int)
        or not 1 <= max_new_tokens <= MAX_NEW_TOKENS
    ):
        raise ValueError(f"max_new_tokens must be an integer from 1 to {MAX_NEW_TOKENS}")
    return prompt, max_new_tokens


def complete(prompt: str, max_new_tokens: int) -> str:
    """Greedy decoding, one byte-token at a time, over the last seq_len bytes of context."""
    import torch

    model, device = load_model()
    context = list(prompt.encode("utf-8"))
    new_tokens = []
    with torch.no_grad():
        for _ in range(max_new_tokens):
            window = torch.tensor([context[-model.config.seq_len :]], device=device)
            next_token = int(model(window)[0, -1].argmax())
            context.append(next_token)
            new_tokens.append(next_token)
    return bytes(new_tokens).decode("utf-8", errors="replace")


def device_name() -> str:
    """The device the model runs on, with the GPU's name when it is one."""
    import torch

    device = load_model()[1]
    if device.type == "cuda":
        return f"cuda: {torch.cuda.get_device_name(device)}"
    return device.type


def handler(job: dict) -> dict:
    """Answer one job: {"completion", "new_tokens", "seconds", "device"}; or {"error"} for bad input.

    "device" names what served it (e.g. "cpu", "cuda: NVIDIA H100 80GB HBM3"), so a caller sees
    whether the endpoint really ran on the GPU its template asked for."""
    try:
        prompt, max_new_tokens = validate(job.get("input") if isinstance(job, dict) else None)
    except ValueError as error:
        return {"error": str(error)}
    started_s = time.perf_counter()
    completion = complete(prompt, max_new_tokens)
    return {
        "completion": completion,
        "new_tokens": max_new_tokens,
        "seconds": time.perf_counter() - started_s,
        "device": device_name(),
    }


if __name__ == "__main__":
    import runpod

    load_model()  # pay the model load at start-up, before the first job arrives
    runpod.serverless.start({"handler": handler})
