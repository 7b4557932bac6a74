"""Every --model option takes a config.json path: a config of every supported model_type,
written by transformers' own config class at a size no catalog model has, answers `memory`
and `pick serve` as JSON; a config missing hidden_size, or of an unknown model_type, is one
line on stderr and exit status 2, with nothing written (the CLI in process, as tests/test_cli.py
runs it)."""

import json

import pytest

pytest.importorskip("transformers")  # the configs are transformers' own to_dict()

from hf_shapes import SMALL, config_json, write_config  # noqa: E402

from lab_utils import cli  # noqa: E402


def run(argv, capsys):
    try:
        status = cli.main(argv)
    except SystemExit as exit_:
        status = exit_.code
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize("case", SMALL, ids=str)
def test_memory_answers_for_a_config_of_every_model_type(case, tmp_path, capsys):
    status, out, err = run(["memory", "--model", write_config(tmp_path, case), "--json"], capsys)
    assert status in (0, None), err
    assert json.loads(out)["total_bytes"] > 0


@pytest.mark.slow  # the advisor weighs every GPU and offer: about 1.4 s a model here, 20 s in all
@pytest.mark.parametrize("case", SMALL, ids=str)
def test_pick_serve_answers_for_a_config_of_every_model_type(case, tmp_path, capsys):
    path = write_config(tmp_path, case)
    status, out, err = run(["pick", "serve", "--model", path, "--requests-per-day", "1000", "--json"], capsys)
    assert status in (0, None), err
    assert json.loads(out)


def test_a_folder_holding_a_config_json_and_the_other_commands(tmp_path, capsys):
    write_config(tmp_path, "qwen3_moe mlp_only head_dim 12")
    for argv in (
        ["memory", "--model", str(tmp_path), "--method", "lora", "--json"],
        ["cost", "fine-tune", "--model", str(tmp_path), "--tokens", "1e6", "--json"],
        ["pick", "fine-tune", "--model", str(tmp_path), "--tokens", "1e6", "--json"],
        ["split", "--model", str(tmp_path), "--gpu", "h100", "--nodes", "1", "--json"],
    ):
        status, out, err = run(argv, capsys)
        assert status in (0, None), (argv, err)
        assert json.loads(out)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda config: config.pop("hidden_size"), "hidden_size"),
        (lambda config: config.update(model_type="mamba"), "model_type='mamba'"),
    ],
    ids=["no hidden_size", "unknown model_type"],
)
@pytest.mark.parametrize("command", [["memory"], ["cost", "fine-tune"], ["pick", "serve"], ["split"]])
def test_a_broken_config_is_one_line_and_exit_2(change, named, command, tmp_path, capsys):
    config = config_json("llama tied")
    change(config)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    before = sorted(tmp_path.iterdir())
    status, out, err = run([*command, "--model", str(path)], capsys)
    assert status == 2 and out == ""
    assert named in err and err.count("\n") == 1, err
    assert sorted(tmp_path.iterdir()) == before  # nothing left behind
