"""The ``lab-utils`` command line, driven through a subprocess as a user would run it."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lab_utils import advisor, bench, cli, machine, memory

ROOT = Path(__file__).resolve().parents[1]


def run(*args, timeout=120):
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    return subprocess.run(
        [sys.executable, "-m", "lab_utils.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=ROOT,
    )


def assert_bad_usage(result, *words):
    """Exit 2, one line on stderr naming what was wrong, no traceback, nothing on stdout."""
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("lab-utils") and "error:" in lines[0]
    assert "Traceback" not in result.stderr and result.stdout == ""
    for word in words:
        assert word in lines[0], (word, lines[0])


@pytest.mark.parametrize(
    "command",
    [
        "",
        "doctor",
        "bench",
        "compare",
        "hardware",
        "memory",
        "cost",
        "cost fine-tune",
        "cost serve",
        "cost breakeven",
    ],
)
def test_every_command_has_help_with_examples(command):
    result = run(*command.split(), "--help")
    assert result.returncode == 0, result.stderr
    assert "usage: lab-utils" in result.stdout and "examples:" in result.stdout
    assert "lab-utils " + command in result.stdout.split("examples:")[1]


@pytest.mark.slow
def test_doctor_reports_and_exit_status_says_whether_the_course_can_run():
    result = run("doctor")
    assert "PyTorch" in result.stdout and "RAM" in result.stdout
    assert "Course              cpu-vs-gpu-course" in result.stdout and "Free disk" in result.stdout
    if not cli.nvidia_gpu_present():
        assert "driver" not in result.stdout  # no NVIDIA GPU here: nothing to install for one
    if result.returncode == 0:
        assert "The course can run here." in result.stdout and "FIX" not in result.stdout
    else:
        assert result.returncode == 1 and "FIX" in result.stdout and "cannot run" in result.stdout


def _report(**changes):
    return machine.MachineReport(**{**vars(machine.describe()), **changes})


def test_doctor_findings_say_what_to_fix():
    everything = {"ipywidgets": True, "jupyterlab_widgets": True}
    fine = _report(cuda_available=True, cuda_version="12.4", ram_bytes=16 * 2**30, runtime="colab")
    assert cli.doctor_findings(fine, installed=everything, free_disk_bytes=1e11, nvidia_gpu=True) == []
    no_gpu = cli.doctor_findings(
        _report(cuda_available=False, cuda_version=None, ram_bytes=16 * 2**30),
        installed=everything,
        free_disk_bytes=1e11,
        nvidia_gpu=False,
    )
    assert [f.fatal for f in no_gpu] == [False] and "Colab" in no_gpu[0].fix
    no_driver = cli.doctor_findings(
        _report(cuda_available=False, cuda_version="12.4", ram_bytes=16 * 2**30),
        installed=everything,
        free_disk_bytes=1e11,
        nvidia_gpu=True,
    )
    assert "driver" in no_driver[0].fix and not no_driver[0].fatal
    # A CUDA build of torch on a machine with no NVIDIA GPU (pip's default on Linux): no driver to
    # install; the CPU build is the smaller choice.
    cuda_build_no_gpu = cli.doctor_findings(
        _report(cuda_available=False, cuda_version="12.4", ram_bytes=16 * 2**30),
        installed=everything,
        free_disk_bytes=1e11,
        nvidia_gpu=False,
    )
    assert len(cuda_build_no_gpu) == 1 and not cuda_build_no_gpu[0].fatal
    assert "driver" not in cuda_build_no_gpu[0].fix and "whl/cpu" in cuda_build_no_gpu[0].fix
    broken = cli.doctor_findings(
        _report(ram_bytes=2**30, runtime="local"), installed={}, free_disk_bytes=1e8, nvidia_gpu=False
    )
    fatal = [f.problem for f in broken if f.fatal]
    assert any("ipywidgets" in p for p in fatal) and any("RAM" in p for p in fatal)
    assert any("disk" in p for p in fatal)
    assert any("jupyterlab_widgets" in f.problem and not f.fatal for f in broken)


@pytest.mark.parametrize(
    "args, words",
    [
        ([], ["COMMAND"]),
        (["no-such-command"], ["no-such-command"]),
        (["doctor", "--bogus"], ["--bogus"]),
        (["memory"], ["--params", "--model"]),
        (["memory", "--params", "-1"], ["--params", "> 0"]),
        (["memory", "--params", "nan"], ["--params"]),
        (["memory", "--params", "lots"], ["--params", "number"]),
        (["memory", "--params", "8e9", "--model", "llama-3.1-8b"], ["not allowed with"]),
        (["memory", "--model", "gpt-9"], ["gpt-9"]),
        (["memory", "--params", "8e9", "--precision", "fp9"], ["--precision", "'fp9'", "bf16"]),
        (
            ["memory", "--model", "llama-3.1-8b", "--method", "full", "--precision", "int4"],
            ["--precision", "'int4'", "mixed"],
        ),
        (["memory", "--model", "llama-3.1-8b", "--batch", "0"], ["--batch", ">= 1"]),
        (["cost"], ["fine-tune", "serve", "breakeven"]),
        (["cost", "fine-tune", "--model", "llama-3.1-8b"], ["--tokens"]),
        (["cost", "fine-tune", "--model", "llama-3.1-8b", "--tokens", "1e8", "--gpu", "Z80"], ["Z80"]),
        (
            ["cost", "fine-tune", "--model", "llama-3.1-8b", "--tokens", "1e8", "--mfu", "2"],
            ["--mfu", "'2'", "<= 1"],
        ),
        (
            [
                "cost",
                "fine-tune",
                "--model",
                "llama-3.1-8b",
                "--tokens",
                "1e8",
                "--gpu",
                "T4",
                "--dtype",
                "bf16",
            ],
            ["--dtype", "T4", "fp16"],
        ),
        (
            ["cost", "fine-tune", "--model", "llama-3.1-8b", "--tokens", "1e8", "--gpu", "AMD EPYC 9684X"],
            ["--gpu", "not a GPU"],
        ),
        (["cost", "serve", "--price-per-hour", "2"], ["--tokens-per-s"]),
        (["cost", "serve", "--model", "llama-3.1-8b", "--engine", "sglang"], ["--engine", "sglang", "vllm"]),
        (
            ["pick", "train", "--params", "1e6", "--examples", "1e6", "--engine", "vllm"],
            ["--engine", "serve"],
        ),
        (["cost", "serve", "--price-per-hour", "-2", "--tokens-per-s", "10"], ["--price-per-hour", ">= 0"]),
        (
            ["cost", "breakeven", "--api-per-million", "inf", "--price-per-hour", "1", "--tokens-per-s", "1"],
            ["--api-per-million"],
        ),
        (["hardware", "Z80"], ["Z80"]),
        (["hardware", "--kind", "tpu"], ["--kind", "gpu"]),
        (["bench", "--seconds", "0"], ["--seconds", "> 0"]),
        (["bench", "--device", "tpu"], ["--device", "cpu"]),
        (["bench", "--dtypes", "fp64"], ["--dtypes", "fp32"]),
        (["compare"], ["RESULT"]),
        (["compare", "nowhere.json"], ["nowhere.json", "does not exist"]),
    ],
)
def test_bad_usage_is_one_line_and_status_2(args, words):
    assert_bad_usage(run(*args), *words)


def test_compare_refuses_a_file_that_is_not_a_bench_result(tmp_path):
    (tmp_path / "notes.json").write_text('{"hello": 1}')
    (tmp_path / "broken.json").write_text("{")
    assert_bad_usage(run("compare", tmp_path / "notes.json"), "notes.json", "bench --json")
    assert_bad_usage(run("compare", tmp_path / "broken.json"), "broken.json", "JSON")


def test_memory_breakdown_and_gpus():
    result = run("memory", "--model", "llama-3.1-8b", "--method", "lora", "--batch", "2", "--seq-len", "1024")
    assert result.returncode == 0, result.stderr
    for word in ("weights", "adapters", "optimizer states", "activations", "total", "H100 SXM", "T4"):
        assert word in result.stdout
    params = run("memory", "--params", "8e9")
    assert params.returncode == 0 and "fits on one" in params.stdout and "needs at least 2" in params.stdout


@pytest.mark.slow
def test_memory_and_cost_do_not_import_torch():
    for args in (
        ["memory", "--model", "llama-3.1-8b"],
        ["cost", "serve", "--model", "llama-3.1-8b"],
        ["cost", "fine-tune", "--model", "llama-3.1-8b", "--tokens", "1e8"],
        ["hardware", "T4"],
    ):
        code = (
            f"import sys; from lab_utils import cli; status = cli.main({args!r}); "
            "assert 'torch' not in sys.modules, 'torch was imported'; sys.exit(status)"
        )
        result = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
            timeout=60,
        )
        assert result.returncode == 0, (args, result.stderr)


def test_cost_commands_agree_with_economics():
    from lab_utils import economics

    serve = run("cost", "serve", "--price-per-hour", "2.5", "--tokens-per-s", "1500")
    assert serve.returncode == 0
    assert f"${economics.cost_per_million_tokens(2.5, 1500):,.2f} per 1M tokens" in serve.stdout
    even = run(
        "cost",
        "breakeven",
        "--api-per-million",
        "0.6",
        "--price-per-hour",
        "2.5",
        "--tokens-per-s",
        "1500",
        "--fine-tune-cost",
        "500",
    )
    tokens = economics.breakeven_tokens_per_month(
        api_cost_per_million=0.6, usd_per_hour=2.5, tokens_per_s=1500, fine_tune_cost=500
    )
    assert even.returncode == 0 and f"{tokens:,.0f} tokens per month" in even.stdout
    never = run(
        "cost", "breakeven", "--api-per-million", "0.01", "--price-per-hour", "2.5", "--tokens-per-s", "10"
    )
    assert "never" in never.stdout
    fine = run("cost", "fine-tune", "--model", "llama-3.1-8b", "--tokens", "1e8", "--price-per-gpu-hour", "2")
    estimate = economics.fine_tune_estimate("llama-3.1-8b", 1e8, usd_per_gpu_hour=2)
    assert fine.returncode == 0 and f"${estimate.cost_usd:,.2f}" in fine.stdout


def test_hardware_lists_and_shows_sources():
    from lab_utils import hardware

    listing = run("hardware")
    assert listing.returncode == 0
    assert all(spec.name in listing.stdout for spec in hardware.catalog())
    one = run("hardware", "h100")
    spec = hardware.get("h100")
    assert one.returncode == 0 and spec.source in one.stdout and spec.source_date in one.stdout


@pytest.mark.slow
def test_bench_json_then_compare_draws_the_class_roofline(tmp_path):
    result = run("bench", "--device", "cpu", "--seconds", "5", "--json", timeout=180)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["format"] == cli.JSON_FORMAT and data["device"] == "cpu"
    assert data["machine"]["python_version"] and data["machine"]["cpu_model"]
    kinds = [row["kind"] for row in data["rows"]]
    assert "matmul" in kinds and set(kinds) <= set(
        bench.KINDS
    )  # a busy machine may skip the copy or the triad
    assert all(row["flops_per_s"] > 0 for row in data["rows"] if row["kind"] == "matmul")
    assert "cases" in result.stderr  # the progress bar (tqdm) went to stderr, not into the JSON
    first = tmp_path / "alice.json"
    first.write_text(result.stdout)
    second = dict(data, machine=dict(data["machine"], device_name="another laptop"))
    second["rows"] = [
        dict(row, flops_per_s=row["flops_per_s"] / 2, bytes_per_s=row["bytes_per_s"] / 2)
        for row in data["rows"]
    ]
    (tmp_path / "bob.json").write_text(json.dumps(second))
    png = tmp_path / "room" / "class.png"
    drawn = run("compare", first, tmp_path / "bob.json", "--output", png, "--devices", "T4", "H100 SXM")
    assert drawn.returncode == 0, drawn.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "alice" in drawn.stdout and "bob" in drawn.stdout


def test_the_t4_fine_tune_answers_in_fp16_with_a_rented_price():
    result = run(
        "cost", "fine-tune", "--model", "llama-3.1-8b", "--tokens", "1e8", "--method", "lora", "--gpu", "T4"
    )
    assert result.returncode == 0, result.stderr
    assert "of the fp16 peak" in result.stdout and "compute_dtypes = fp16" in result.stdout
    assert "Colab" not in result.stdout and "$0.00" not in result.stdout  # a free tier is not a price


def test_an_internal_error_is_a_bug_with_its_traceback(monkeypatch, capsys):
    from lab_utils import hardware

    def broken(kind=None):
        raise ValueError("catalog damaged")

    monkeypatch.setattr(hardware, "catalog", broken)
    assert cli.main(["hardware"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "catalog damaged" in err and "this is a bug in lab-utils" in err


def test_every_answer_ends_with_the_assumptions_it_took(capsys):
    for args in (
        ["memory", "--model", "llama-3.1-8b", "--method", "lora"],
        ["cost", "fine-tune", "--model", "llama-3.1-8b", "--tokens", "1e8"],
        ["cost", "serve", "--model", "llama-3.1-8b"],
        ["pick", "fine-tune", "--model", "llama-3.1-8b", "--tokens", "1e8", "--limit", "2"],
    ):
        assert cli.main(args) == 0
        out = capsys.readouterr().out
        tail = out.split("assumptions (lab_utils/data/assumptions.toml):\n")[1].splitlines()
        assert tail and all(line.startswith("  ") and " = " in line for line in tail), (args, out)
    assert cli.main(["cost", "fine-tune", "--model", "llama-3.1-8b", "--tokens", "1e8", "--mfu", "0.5"]) == 0
    assert "mfu = " not in capsys.readouterr().out  # given, so not an assumption


@pytest.mark.parametrize("method", ["full", "lora", "qlora"])
def test_every_catalog_gpu_and_method_answers(method, capsys):
    from lab_utils import hardware

    for spec in hardware.catalog("gpu"):
        argv = ["cost", "fine-tune", "--model", "llama-3.1-8b", "--tokens", "1e8", "--method", method]
        try:
            status = cli.main([*argv, "--gpu", spec.name])
        except SystemExit as exit_:  # a usage error: one line, status 2
            status = exit_.code
        shown = capsys.readouterr()
        if status == 2:  # too small at any count (an 8 GB card): said in one line
            assert "no number of GPUs holds the job" in shown.err and len(shown.err.splitlines()) == 1
            continue
        assert status == 0, (spec.name, method, shown)
        assert spec.name in shown.out
    for model in ("gpt2", "llama-3.1-8b", "llama-3.1-70b"):
        assert cli.main(["memory", "--model", model, "--method", method]) == 0
        assert (
            cli.main(
                ["pick", "fine-tune", "--model", model, "--tokens", "1e7", "--method", method, "--limit", "3"]
            )
            == 0
        )
    assert cli.main(["memory", "--model", "llama-3.1-8b", "--method", "inference"]) == 0


def test_cost_serve_reports_the_serving_estimate(capsys):
    from lab_utils import serving

    assert (
        cli.main(
            [
                "cost",
                "serve",
                "--model",
                "llama-3.1-8b",
                "--batch",
                "32",
                "--input-tokens",
                "3584",
                "--output-tokens",
                "512",
                "--efficiency",
                "1",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    estimate = serving.estimate("llama-3.1-8b", device="H100 SXM", batch=32, prompt_len=3584, output_len=512)
    assert f"{estimate.output_tokens_per_s:,.0f}" in out and "room for 115" in out
    assert f"${estimate.usd_per_million_output_tokens:,.2f} per 1M generated tokens" in out
    assert "through the engine vllm" in out  # the H100's default engine, named
    assert cli.main(["cost", "serve", "--model", "llama-3.1-8b", "--precision", "int4"]) == 0
    printed = capsys.readouterr().out
    # vLLM's 4-bit decode figure is sourced; its compute (W4A16 computes in 16 bits) is not, and says so
    assert "no published decode figure" not in printed
    assert "(vllm's compute: no published figure; its 16-bit decode figure (0.74) stands in)" in printed
    with pytest.raises(SystemExit) as exited:
        cli.main(["cost", "serve", "--model", "llama-3.1-8b", "--batch", "5000"])
    assert exited.value.code == 2 and "--batch" in capsys.readouterr().err


def test_pick_fine_tune_of_70b_in_full_rents_whole_servers(capsys):
    assert (
        cli.main(
            [
                "pick",
                "fine-tune",
                "--model",
                "llama-3.1-70b",
                "--tokens",
                "1e7",
                "--method",
                "full",
                "--limit",
                "3",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "24 x H100 SXM (3 servers)" in out and "max_devices = 8" in out  # ZeRO-3 as DeepSpeed reserves it


@pytest.mark.parametrize(
    "command",
    [
        ["memory", "--model", "llama-3.1-8b", "--method", "lora"],
        ["cost", "fine-tune", "--model", "llama-3.1-8b", "--tokens", "1e8"],
        ["cost", "serve", "--model", "llama-3.1-8b", "--gpu", "h100"],
        [
            "cost",
            "breakeven",
            "--api-per-million",
            "0.6",
            "--price-per-hour",
            "2.5",
            "--tokens-per-s",
            "1500",
            "--fine-tune-cost",
            "100",
        ],
        ["pick", "fine-tune", "--model", "llama-3.1-8b", "--tokens", "1e8", "--limit", "1"],
        ["pick", "serve", "--model", "llama-3.1-8b", "--requests-per-day", "100", "--limit", "1"],
    ],
)
def test_each_assumption_names_an_option_the_command_has(command, capsys):
    """An assumption line offers '[--option]' only where that command accepts the option."""
    assert cli.main(command) == 0
    answer = capsys.readouterr().out
    offered = re.findall(r"\[(--[a-z-]+)\]$", answer.split("assumptions (", 1)[1], flags=re.M)
    assert offered, answer
    with pytest.raises(SystemExit):
        cli.main([*command[: 2 if command[0] in ("cost", "pick") else 1], "--help"])
    help_text = capsys.readouterr().out
    assert [flag for flag in offered if flag not in help_text] == []


def test_memory_max_seq_len_is_the_calculator_answer():
    result = run(
        "memory",
        "--model",
        "llama-3.1-8b",
        "--method",
        "qlora",
        "--gpu",
        "rtx-4090",
        "--max-seq-len",
        "--loss",
        "chunked",
    )
    assert result.returncode == 0, result.stderr
    from lab_utils import memory

    fit = memory.longest_seq_len("llama-3.1-8b", "RTX 4090", method="qlora", loss_impl="chunked")
    assert f"at most {fit.seq_len:,} tokens per sequence (limited by memory)" in result.stdout
    assert "loss at its peak (chunked)" in result.stdout and "loss_chunks = 8" in result.stdout
    assert_bad_usage(run("memory", "--model", "llama-3.1-8b", "--max-seq-len"), "--max-seq-len", "--gpu")
    assert_bad_usage(
        run("memory", "--model", "llama-3.1-8b", "--gpu", "T4", "--seq-len", "10", "--max-seq-len"),
        "--seq-len",
    )


def test_a_bare_parameter_count_gives_the_lower_bound_the_advisor_uses():
    """memory --params and advisor.fine_tune of a bare count share memory.param_count_parts."""
    result = run("memory", "--params", "8e9", "--method", "lora", "--json")
    assert result.returncode == 0, result.stderr
    total = json.loads(result.stdout)["total_bytes"]
    assert total == memory.weight_bytes(8e9, "bf16")
    assert dict(advisor.fine_tune(8e9, 1e8, method="lora").derived)["memory_bytes"] == total


def test_bench_prints_each_skipped_case_once(monkeypatch, capsys):
    """A copy is planned with one thread and with all of them: two skipped copies of one size
    print as two different lines, each once, saying which is which."""
    skipped = (
        bench.Skipped("copy", 2**26, "fp32", "the time budget is spent", threads=1),
        bench.Skipped("copy", 2**26, "fp32", "the time budget is spent", threads=2),
        bench.Skipped("matmul", 2048, "fp32", "the time budget is spent"),
    )
    table = bench.BenchTable((), skipped, "cpu", 1.0, 1.0)
    monkeypatch.setattr(bench, "sweep", lambda **kwargs: table)
    assert cli.main(["bench", "--device", "cpu", "--seconds", "1"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("skipped")]
    assert lines == [
        "skipped copy 268.4 MB fp32 (1 thread): the time budget is spent",
        "skipped copy 268.4 MB fp32 (2 threads): the time budget is spent",
        "skipped matmul n=2048 fp32: the time budget is spent",
    ]
