"""Every catalog model through memory, cost, pick and split (issue 35, item 6): each command
answers or refuses in one line with exit status 2, never a traceback."""

import pytest

from lab_utils import cli, llms

COMMANDS = [
    ["memory"],
    ["memory", "--method", "lora"],
    ["memory", "--method", "qlora"],
    ["memory", "--method", "full"],
    ["cost", "serve"],
    ["cost", "fine-tune", "--tokens", "1e7"],
    ["pick", "serve", "--requests-per-day", "1000"],
    ["pick", "fine-tune", "--tokens", "1e7", "--limit", "2"],
    ["split", "--gpu", "h100"],
]


@pytest.mark.parametrize("name", [config.name for config in llms.catalog()])
def test_every_catalog_model_answers_every_command_without_a_traceback(name, capsys):
    for command in COMMANDS:
        words = command[:2] if command[0] in ("cost", "pick") else command[:1]
        argv = [*words, "--model", name, *command[len(words) :]]
        try:
            status = cli.main(argv)
        except SystemExit as exit:  # argparse's way out: its one-line message, status 2
            status = exit.code
        out, err = capsys.readouterr()
        assert "Traceback" not in err, (argv, err)
        assert status == 0 or (status == 2 and len(err.strip().splitlines()) == 1), (argv, status, err)
        if status == 0:
            assert out.strip(), argv
