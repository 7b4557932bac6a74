"""``lab-utils latency``: the simulator's answer for one replica, as text or JSON."""

import json

import pytest

from lab_utils import cli, replica
from lab_utils.cli.latency import JSON_KEYS

JOB = ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--prompt-len", "1000", "--output-len", "200"]


def run_json(capsys, *extra):
    assert cli.main(["latency", *JOB, *extra, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_has_exactly_the_issue_keys_and_is_the_simulators_answer(capsys):
    answer = run_json(capsys, "--rate", "4", "--num-requests", "300")
    assert tuple(answer) == JSON_KEYS
    same = replica.at_rate(
        "Llama-3.1-8B", device="H100 SXM", rate_per_s=4, prompt_len=1000, output_len=200, n_requests=300
    )
    assert answer == pytest.approx(same.summary())


def test_concurrency_is_a_closed_loop(capsys):
    answer = run_json(capsys, "--concurrency", "8", "--num-requests", "40")
    same = replica.at_concurrency(
        "Llama-3.1-8B", device="H100 SXM", concurrency=8, prompt_len=1000, output_len=200, n_requests=40
    )
    assert answer == pytest.approx(same.summary())


def test_the_levers_reach_the_simulator(capsys):
    plain = run_json(capsys, "--rate", "4", "--num-requests", "200")
    fast = run_json(
        capsys, "--rate", "4", "--num-requests", "200", "--spec-decode", "3", "--spec-acceptance", "0.8"
    )
    assert fast["tpot_p50_s"] < plain["tpot_p50_s"]
    cached = run_json(capsys, "--rate", "4", "--num-requests", "200", "--prefix-hit", "0.9")
    assert cached["ttft_p50_s"] < plain["ttft_p50_s"]
    whole = run_json(capsys, "--rate", "4", "--num-requests", "200", "--no-chunked-prefill")
    assert whole["tpot_p99_s"] != plain["tpot_p99_s"]


def test_text_names_the_engine_percentiles_and_assumptions(capsys):
    assert cli.main(["latency", *JOB, "--rate", "2", "--num-requests", "100"]) == 0
    out = capsys.readouterr().out
    assert "through vllm" in out and "time to first token" in out and "p99" in out
    assert "max_num_seqs = 1024" in out and "[--max-num-seqs]" in out


def test_a_config_json_path_is_a_model(tmp_path, capsys):
    config = {
        "model_type": "llama",
        "hidden_size": 512,
        "intermediate_size": 1024,
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "vocab_size": 1000,
        "tie_word_embeddings": True,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    argv = ["latency", "--model", str(path), "--gpu", "t4", "--rate", "1", "--prompt-len", "100"]
    assert cli.main([*argv, "--output-len", "20", "--num-requests", "20", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["requests_per_s"] > 0


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--rate", "1", "--concurrency", "2"], "not allowed with argument"),
        (["--rate", "1", "--spec-decode", "3"], "--spec-decode"),
        (["--rate", "1", "--prefix-hit", "1.5"], "--prefix-hit"),
        (["--rate", "-1"], "--rate"),
        (["--concurrency", "1", "--max-num-batched-tokens", "8"], "max_num_batched_tokens=8"),
    ],
)
def test_bad_input_is_one_line_and_status_2(argv, message, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["latency", *JOB, *argv])
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1]
