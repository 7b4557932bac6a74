"""lab_utils.offload: a model split between a GPU and its host, held against hand-worked cases
(issue 37): all on the GPU is the serving bound, all on the host the CPU bound, and a split's
time is the sum of its parts, worked on paper for Llama-3.2-1B."""

import pytest

from lab_utils import llms, offload, serving

GPU, HOST = "RTX 4090", "AMD Ryzen 9 7950X"


@pytest.mark.parametrize("precision", ["bf16", "int4", "q4_0"])
def test_all_on_the_gpu_is_the_serving_bound_on_the_gpu(precision):
    placed = offload.estimate("Llama-3.1-8B", gpu=GPU, host=HOST, precision=precision, context_len=2048)
    served = "int4" if precision == "q4_0" else precision
    bound_s = serving.decode_step_s(
        "Llama-3.1-8B",
        device=GPU,
        context_len=2048,
        precision=served,
        weight_bytes_per_param=offload.bytes_per_weight(precision),
    )
    assert placed.decode_step_s == pytest.approx(bound_s, rel=1e-12)
    assert (placed.host_s, placed.link_s, placed.host_bytes) == (0.0, 0.0, 0.0)
    assert placed.placement == "all on the GPU"


def test_all_on_the_host_is_the_cpu_bound():
    placed = offload.estimate("Llama-3.1-8B", gpu=GPU, host=HOST, gpu_layers=0, context_len=1024)
    bound_s = serving.decode_step_s("Llama-3.1-8B", device=HOST, context_len=1024)
    assert placed.decode_step_s == pytest.approx(bound_s, rel=1e-12)
    assert (placed.gpu_s, placed.link_s, placed.gpu_bytes) == (0.0, 0.0, 0.0)


def test_prefill_all_on_the_gpu_is_the_serving_prefill_bound():
    placed = offload.estimate(
        "Llama-3.1-8B", gpu=GPU, host=HOST, prompt_len=1000, context_len=1000, engine="bound"
    )
    bound_s = serving.prefill_s("Llama-3.1-8B", device=GPU, prompt_len=1000)
    assert placed.prefill_tokens_per_s == pytest.approx(1000 / bound_s, rel=1e-12)


def test_a_split_is_the_sum_of_its_parts_worked_on_paper():
    """Llama-3.2-1B in bf16, 8 of its 16 blocks on an RTX 4090 (1,008 GB/s, PCIe 4.0 x16), the
    other 8 with the tied embedding and final norm on a Ryzen 9 7950X (2 x 8 bytes x 5.2 GT/s =
    83.2 GB/s), 1,000 tokens of context.

    One block: q and o 2048 x 2048, k and v 2048 x 512, MLP 3 x 2048 x 8192, two norms of 2048:
    60,821,504 parameters. Embedding 128,256 x 2048 + final norm 2048 = 262,670,336. KV cache per
    layer and token: 2 x 8 heads x 64 x 2 bytes = 2,048 bytes."""
    block, ends, kv_layer = 60_821_504, 262_670_336, 2 * 8 * 64 * 2 * 1000
    assert llms.get("Llama-3.2-1B").n_params == 16 * block + ends
    gpu_s = (8 * block * 2 + 8 * kv_layer) / 1008e9
    host_s = ((8 * block + ends) * 2 + 8 * kv_layer) / 83.2e9
    pcie_s = 2 * 2048 * 2 / (16e9 * 16 * 128 / 130 / 8)  # in to the GPU's first block, out to the head
    placed = offload.estimate(
        "Llama-3.2-1B", gpu=GPU, host=HOST, gpu_layers=8, precision="bf16", context_len=1000, engine="bound"
    )
    assert placed.gpu_s == pytest.approx(gpu_s, rel=1e-12)
    assert placed.host_s == pytest.approx(host_s, rel=1e-12)
    assert placed.link_s == pytest.approx(pcie_s, rel=1e-12)
    assert placed.decode_bound_tokens_per_s == pytest.approx(1 / (gpu_s + host_s + pcie_s), rel=1e-12)
    assert placed.decode_tokens_per_s == placed.decode_bound_tokens_per_s  # engine "bound"
    assert placed.gpu_bytes == 8 * block * 2 + 8 * kv_layer
    assert placed.host_bytes == (8 * block + ends) * 2 + 8 * kv_layer
    assert placed.placement == "8 of 16 layers on the GPU"


def test_streamed_weights_cross_pcie_every_step():
    """vLLM's --cpu-offload-gb: 4 GB of Llama-3.1-8B's bf16 weights live in RAM; a step reads the
    rest from HBM and the 4 GB over PCIe (31.5 GB/s one way)."""
    whole = offload.estimate("Llama-3.1-8B", gpu=GPU, host=HOST, context_len=1000)
    streamed = offload.estimate("Llama-3.1-8B", gpu=GPU, host=HOST, context_len=1000, stream_bytes=4e9)
    pcie = 16e9 * 16 * 128 / 130 / 8
    assert streamed.decode_step_s == pytest.approx(whole.decode_step_s - 4e9 / 1008e9 + 4e9 / pcie)
    assert streamed.gpu_bytes == pytest.approx(whole.gpu_bytes - 4e9)
    assert streamed.host_bytes == 4e9
    with pytest.raises(ValueError, match="stream_bytes"):
        offload.estimate("Llama-3.1-8B", gpu=GPU, host=HOST, stream_bytes=17e9)


def test_tokens_per_s_fall_off_a_cliff_as_the_last_layers_leave_the_gpu():
    speeds = [
        offload.estimate(
            "Llama-3.1-8B", gpu=GPU, host=HOST, gpu_layers=n, precision="q4_k_m"
        ).decode_bound_tokens_per_s
        for n in range(33)
    ]
    assert speeds == sorted(speeds)
    assert speeds[32] / speeds[28] > 2  # four blocks (an eighth) on the host more than halve the speed


def test_a_model_too_large_for_the_gpu_fits_split():
    whole = offload.estimate("Llama-3.1-70B", gpu=GPU, host=HOST, precision="q4_k_m")
    assert not whole.fits
    (best,) = offload.fitting_placements("Llama-3.1-70B", gpu=GPU, host=HOST, precision="q4_k_m")
    assert best.fits and 0 < best.gpu_layers < 80
    assert not offload.estimate(
        "Llama-3.1-70B", gpu=GPU, host=HOST, precision="q4_k_m", gpu_layers=best.gpu_layers + 1
    ).fits


def test_weight_formats_are_the_assumptions_bits():
    assert offload.bytes_per_weight("q4_0") == 4.5 / 8
    assert offload.bytes_per_weight("q8_0") == 8.5 / 8
    assert offload.bytes_per_weight("mxfp4") == 4.25 / 8
    assert offload.bytes_per_weight("q4_k_m") == pytest.approx(4.84 / 8)
    with pytest.raises(ValueError, match="precision"):
        offload.bytes_per_weight("q3_k")


@pytest.mark.parametrize(
    "options, named",
    [
        (dict(gpu_layers=33), "gpu_layers=33: Llama-3.1-8B has 32"),
        (dict(cpu_moe_layers=4), "cpu_moe_layers=4: Llama-3.1-8B has no experts"),
        (dict(stream_bytes=1e9, gpu_layers=4), "stream_bytes"),
        (dict(gpu_layers=-1), "gpu_layers"),
    ],
)
def test_a_bad_placement_is_refused_by_name(options, named):
    with pytest.raises(ValueError, match=named):
        offload.estimate("Llama-3.1-8B", gpu=GPU, host=HOST, **options)


def test_the_gpu_must_be_a_gpu_and_the_host_a_cpu():
    with pytest.raises(ValueError, match="host="):
        offload.estimate("Llama-3.1-8B", gpu=GPU, host="H100 SXM")
    with pytest.raises(ValueError, match="gpu="):
        offload.estimate("Llama-3.1-8B", gpu=HOST, host=HOST)


def test_prefill_takes_the_faster_path_for_the_hosts_weights():
    """A long prompt: copying the host layers' weights to the 4090 (31.5 GB/s) costs less than the
    desktop CPU's 2.3 TFLOP/s would take, so llama.cpp copies them; either way prefill is slower
    than the whole model on the GPU."""
    common = dict(gpu=GPU, host=HOST, prompt_len=4000, engine="bound")
    desktop = offload.estimate("Llama-3.1-8B", gpu_layers=16, **common)
    assert desktop.prefill_host_path == "copied to the GPU"
    whole = offload.estimate("Llama-3.1-8B", **common)
    assert desktop.prefill_tokens_per_s < whole.prefill_tokens_per_s


# --- training that offloads (ZeRO-Offload, ZeRO-Infinity) ----------------------------------------


def test_zero_offload_keeps_the_16_bit_weights_on_the_gpu_and_the_rest_in_ram():
    """Mixed-precision Adam, 16 bytes per parameter: ZeRO-Offload leaves 2 (the fp16 weights) on
    the GPU and moves 2 + 12 (gradients, fp32 master and moments) to the host; ZeRO-Infinity moves
    the weights too and gathers the largest module (the embedding, 4 bytes per parameter)."""
    from lab_utils import memory

    n = llms.get("Llama-3.1-8B").n_params
    whole = memory.job_estimate("Llama-3.1-8B", method="full")
    zero_offload = memory.job_estimate("Llama-3.1-8B", method="full", offload="optimizer")
    infinity = memory.job_estimate("Llama-3.1-8B", method="full", offload="optimizer+params")
    assert zero_offload.host_bytes == 14 * n and infinity.host_bytes == 16 * n
    assert zero_offload.gpu_bytes == whole.gpu_bytes - 14 * n
    gathered = 4 * 128_256 * 4096
    assert infinity.gpu_bytes == whole.gpu_bytes - 16 * n + gathered
    assert whole.host_bytes == 0.0 and whole.gpu_bytes == whole.total_bytes
    with pytest.raises(ValueError, match="offload"):
        memory.job_estimate("Llama-3.1-8B", method="inference", offload="optimizer")
    with pytest.raises(ValueError, match="offload"):
        memory.job_estimate("Llama-3.1-8B", method="lora", offload="optimizer+params")


def test_an_offloaded_fine_tune_pays_pcie_and_the_cpu_adam_step_each_iteration():
    """One iteration of ZeRO-Offload on an RTX 4090 with a Threadripper 7980X host (166.4 GB/s),
    Llama-3.2-1B full fine-tune: the GPU's time as without offload, PCIe 2 bytes per parameter up
    after the step (31.5 GB/s; the gradients go down during backward, hidden), Adam 30 bytes per
    parameter over the host's bandwidth."""
    from lab_utils import economics

    n = llms.get("Llama-3.2-1B").n_params
    common = dict(method="full", gpu="RTX 4090", n_gpus=1, batch=4, seq_len=2048, usd_per_gpu_hour=1.0)
    plain = economics.fine_tune_estimate("Llama-3.2-1B", 1e8, **common)
    offloaded = economics.fine_tune_estimate(
        "Llama-3.2-1B", 1e8, offload="optimizer", host="AMD Ryzen Threadripper 7980X", **common
    )
    iterations = 1e8 / (4 * 2048)
    parts = dict(offloaded.iteration_parts)
    assert parts["GPU compute"] * iterations == pytest.approx(plain.hours * 3600)
    assert parts["PCIe"] == pytest.approx(2 * n / (16e9 * 16 * 128 / 130 / 8))
    assert parts["CPU Adam"] == pytest.approx(30 * n / 166.4e9)
    assert offloaded.hours == pytest.approx(iterations * sum(parts.values()) / 3600)
    assert offloaded.host_bytes == 14 * n and offloaded.memory_bytes < plain.memory_bytes
    assert offloaded.cost_usd > plain.cost_usd


# --- the command line ---------------------------------------------------------------------------


def test_lab_utils_offload_answers_in_json_for_layers_on_the_gpu(capsys):
    import json

    from lab_utils import cli

    argv = ["offload", "--model", "llama-3.1-70b", "--gpu", "rtx-4090", "--host", "7950x"]
    assert cli.main([*argv, "--gpu-layers", "40", "--precision", "q4_k_m", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    placed = offload.estimate(
        "Llama-3.1-70B", gpu=GPU, host=HOST, gpu_layers=40, precision="q4_k_m", engine="bound"
    )
    assert answer["gpu_bytes"] == placed.gpu_bytes and answer["host_bytes"] == placed.host_bytes
    assert answer["decode_tokens_per_s"] == placed.decode_tokens_per_s
    assert answer["placement"] == "40 of 80 layers on the GPU"


def test_lab_utils_offload_refuses_a_bad_placement_in_one_line(capsys):
    from lab_utils import cli

    argv = [
        "offload",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "rtx-4090",
        "--host",
        "7950x",
        "--gpu-layers",
        "40",
    ]
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "gpu_layers=40: Llama-3.1-8B has 32 transformer blocks" in error


def test_lab_utils_memory_shows_the_offloaded_placements_that_fit(capsys):
    from lab_utils import cli

    argv = [
        "memory",
        "--model",
        "llama-3.1-70b",
        "--gpu",
        "rtx-4090",
        "--precision",
        "int4",
        "--host",
        "7950x",
    ]
    assert cli.main(argv) == 0
    shown = capsys.readouterr().out
    (best,) = offload.fitting_placements(
        "Llama-3.1-70B", gpu=GPU, host=HOST, precision="int4", context_len=4096
    )
    assert "It does not fit one RTX 4090" in shown and best.placement in shown
    assert cli.main(["memory", "--model", "llama-3.1-8b", "--method", "full", "--gpu", "rtx-4090"]) == 0
    shown = capsys.readouterr().out
    assert "optimizer+params" in shown and "fits the GPU" in shown


# --- a mixture of experts: the experts in RAM ----------------------------------------------------


def test_experts_on_the_host_worked_on_paper():
    """Qwen3-30B-A3B in bf16, every layer's routed experts in the 7950X's RAM (83.2 GB/s), the rest
    and the KV cache (1,000 tokens) on the RTX 4090 (1,008 GB/s). Each of the 48 layers: 128 experts
    of 3 x 2048 x 768 parameters, 8 per token; the hidden state (2,048 values, 2 bytes) crosses
    PCIe twice per layer. At batch 1 the host reads 8 experts per layer."""
    config = llms.get("Qwen3-30B-A3B")
    layer = config.layers[0]
    assert (len(config.layers), layer.mlp.n_experts, layer.mlp.top_k) == (48, 128, 8)
    assert layer.expert_params == 3 * 2048 * 768
    routed, read = 48 * 128 * layer.expert_params, 48 * 8 * layer.expert_params
    kv = 48 * layer.attention.kv_values_per_token * 1000 * 2
    host_s = read * 2 / 83.2e9
    gpu_s = ((config.n_params - routed) * 2 + kv) / 1008e9
    link_s = 48 * 2 * 2048 * 2 / (16e9 * 16 * 128 / 130 / 8)
    placed = offload.estimate(
        config, gpu=GPU, host=HOST, experts_on_host=True, precision="bf16", context_len=1000
    )
    assert placed.host_s == pytest.approx(host_s, rel=1e-12)
    assert placed.gpu_s == pytest.approx(gpu_s, rel=1e-12)
    assert placed.link_s == pytest.approx(link_s, rel=1e-12)
    assert placed.host_bytes == routed * 2 and placed.gpu_bytes == (config.n_params - routed) * 2 + kv
    assert placed.placement == "experts of every layer in RAM, the rest on the GPU"
    whole = offload.estimate(config, gpu=GPU, host=HOST, precision="bf16", context_len=1000)
    assert not whole.fits and placed.fits


def test_fewer_expert_layers_in_ram_is_faster_while_it_fits():
    speeds = [
        offload.estimate("gpt-oss-120b", gpu=GPU, host=HOST, cpu_moe_layers=n).decode_bound_tokens_per_s
        for n in (36, 24, 12, 0)
    ]
    assert speeds == sorted(speeds)
    fitting = offload.fitting_placements("gpt-oss-120b", gpu=GPU, host=HOST)
    assert fitting and all(p.fits for p in fitting)
    assert any(0 < p.cpu_moe_layers < 36 for p in fitting)


def test_lab_utils_offload_answers_in_json_for_experts_on_the_host(capsys):
    import json

    from lab_utils import cli

    argv = ["offload", "--model", "qwen3-30b-a3b", "--gpu", "rtx-4090", "--host", "7950x"]
    assert cli.main([*argv, "--experts-on-host", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    placed = offload.estimate("Qwen3-30B-A3B", gpu=GPU, host=HOST, experts_on_host=True)
    assert answer["host_bytes"] == placed.host_bytes > answer["gpu_bytes"] == placed.gpu_bytes
    assert answer["decode_tokens_per_s"] == placed.decode_tokens_per_s and answer["cpu_moe_layers"] == 48


def test_lab_utils_offload_takes_a_config_json(tmp_path, capsys):
    import json

    from lab_utils import cli

    config = {
        "model_type": "qwen3",
        "hidden_size": 5120,
        "intermediate_size": 17408,
        "num_hidden_layers": 40,
        "num_attention_heads": 40,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 151936,
        "max_position_embeddings": 40960,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    argv = ["offload", "--model", str(path), "--gpu", "rtx-4090", "--host", "7950x", "--gpu-layers", "20"]
    assert cli.main([*argv, "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    placed = offload.estimate(config, gpu=GPU, host=HOST, gpu_layers=20)
    assert (answer["n_layers"], answer["host_bytes"]) == (40, placed.host_bytes)


def test_prefill_of_a_split_worked_on_paper():
    """Llama-3.2-1B in bf16, 8 of 16 blocks on the RTX 4090, a 1,000-token prompt. Causal attention
    per token and layer: 2 x 32 heads x (64 + 64) x 500 keys on average. The GPU computes its blocks
    at 165 TFLOP/s (bf16); the host's 8 blocks with the tied embedding are either copied over PCIe
    (31.5 GB/s) and computed on the GPU, or computed by the 7950X at 2.3 TFLOP/s (fp32): the faster."""
    block, ends, tokens = 60_821_504, 262_670_336, 1000
    attention = 8 * 2 * 32 * (64 + 64) * 500
    gpu_s = max(tokens * (2 * 8 * block + attention) / 165e12, 8 * block * 2 / 1008e9)
    host_flops = tokens * (2 * (8 * block + ends) + attention)
    copied_s = max((8 * block + ends) * 2 / (16e9 * 16 * 128 / 130 / 8), host_flops / 165e12)
    computed_s = max(host_flops / (16 * 4.5e9 * 32), (8 * block + ends) * 2 / 83.2e9)
    placed = offload.estimate(
        "Llama-3.2-1B", gpu=GPU, host=HOST, gpu_layers=8, precision="bf16", prompt_len=tokens, engine="bound"
    )
    assert copied_s < computed_s and placed.prefill_host_path == "copied to the GPU"
    assert placed.prefill_tokens_per_s == pytest.approx(tokens / (gpu_s + copied_s), rel=1e-12)
    amx = offload.estimate(
        "DeepSeek-V3", gpu=GPU, host="2 x Intel Xeon Gold 6454S", experts_on_host=True, prompt_len=500
    )
    assert amx.prefill_host_path == "computed on the host"  # 144 TFLOP/s of AMX beat copying 600 GB


def test_pick_serve_ranks_a_gpu_with_the_experts_in_its_hosts_ram():
    """gpt-oss-120b does not fit one 24 GB card; the advisor ranks the RTX 4090 with the experts
    that do not fit in its host's RAM, timed by offload (one request at a time)."""
    from lab_utils import advisor, assumptions

    advice = advisor.serve("gpt-oss-120b", 1000)
    host = assumptions.value("offload_host")
    hybrid = next(o for o in advice.options if o.name.startswith(f"RTX 4090 + {host} host"))
    (best, *_) = [
        p
        for p in offload.fitting_placements(
            "gpt-oss-120b", gpu=GPU, host=host, prompt_len=500, context_len=700
        )
        if p.cpu_moe_layers
    ]
    assert best.placement in hybrid.name and hybrid.fits and hybrid.why is None
    assert hybrid.latency_s == pytest.approx(500 / best.prefill_tokens_per_s + 200 / best.decode_tokens_per_s)
