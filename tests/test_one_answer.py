"""One question, one figure (issue 39): where two faces of the course (the notebooks' stored
outputs, the command line, the notebooks' answers) answer the same question, they print the same
figure. Each question below names a pattern that finds its figure in any face's text; a face that
does not answer it is skipped, and the test fails when fewer than two faces answer (so it cannot
pass by finding nothing)."""

import contextlib
import io
import json
import re
from pathlib import Path

from lab_utils import answers, assumptions, cli, course

ROOT = Path(__file__).resolve().parents[1]


def stored_outputs(number: str) -> str:
    """The text of a notebook's stored (checked) outputs."""
    path = next(p for p in course.notebook_paths(ROOT / "notebooks") if p.name.startswith(number))
    texts = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        for output in cell.get("outputs", []):
            texts.append("".join(output.get("text", "")))
            data = output.get("data", {})
            texts.append("".join(data.get("text/markdown", "")) or "".join(data.get("text/plain", "")))
    return "\n".join(texts)


def command_line(*args: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(list(args)) == 0
    return out.getvalue()


def figures(pattern: str, faces: dict[str, str]) -> dict[str, set[str]]:
    found = {name: set(re.findall(pattern, text.replace("\\$", "$"))) for name, text in faces.items()}
    return {name: values for name, values in found.items() if values}


def assert_one_figure(pattern, faces):
    found = figures(pattern, faces)
    assert len(found) >= 2, f"fewer than two faces answer it: {sorted(found)}"
    assert len(set().union(*found.values())) == 1, f"the faces disagree: {found}"


def test_how_wrong_the_cpu_cluster_price_claim_is_one_figure_in_05_and_07():
    faces = {"notebook 05": stored_outputs("05"), "notebook 07": stored_outputs("07")}
    assert_one_figure(r"\$2\.50/h[^\n]*?(\d+(?:\.\d+)?)x too low", faces)


def test_the_plain_cold_start_of_an_8b_worker_is_one_figure_in_the_answers_and_the_command_line():
    faces = {
        "notebook 04's answers": answers.markdown("04"),
        "notebook 04's stored answers": stored_outputs("04"),
        "lab-utils pick serve": command_line(
            "pick", "serve", "--model", "llama-3.1-8b", "--requests-per-day", "1000", "--limit", "3"
        ),
    }
    assert_one_figure(
        r"(?:plain start (?:\d+ s in fp8, )?|About )(\d+) s(?: in bf16| for a plain start)", faces
    )


def test_lora_of_an_8b_on_a_24_gb_card_is_one_answer_in_the_calculator_the_command_line_and_the_guide():
    estimate = json.loads(command_line("memory", "--model", "llama-3.1-8b", "--method", "lora", "--json"))
    from lab_utils import memory

    calculator = memory.gpus_needed(memory.job_estimate("llama-3.1-8b", "lora").total_bytes, "RTX 4090")
    assert estimate["gpus_needed"]["RTX 4090"] == calculator
    guide = (ROOT / "book" / "instructor-guide.md").read_text(encoding="utf-8")
    assert not re.search(r"LoRA fits a 24 GB|LoRA (?:on|of) an 8B[^.]*24 GB", guide), (
        "the guide asks the calculator"
    )


def test_h100s_for_a_full_fine_tune_of_an_8b_is_one_figure_in_memory_and_cost():
    """memory and cost fine-tune give one count, memory.gpus_to_hold's (ZeRO-3 as DeepSpeed
    reserves it: 3 H100s, where the total split evenly said 2); cost rents the server shape that
    holds it (basics.whole_servers), and says both."""
    from lab_utils import basics, hardware, memory

    memory_json = json.loads(command_line("memory", "--model", "llama-3.1-8b", "--method", "full", "--json"))
    cost_json = json.loads(
        command_line(
            "cost", "fine-tune", "--model", "llama-3.1-8b", "--tokens", "1e8", "--method", "full", "--json"
        )
    )
    estimate = memory.job_estimate("llama-3.1-8b", "full")
    held = memory.gpus_to_hold("llama-3.1-8b", estimate, "H100 SXM")
    assert memory_json["gpus_needed"]["H100 SXM"] == cost_json["gpus_needed"] == held
    assert held > memory.gpus_needed(estimate.total_bytes, "H100 SXM")  # even splitting undercounts
    shapes = assumptions.server_shapes(hardware.get("H100 SXM"))
    assert cost_json["n_gpus"] == basics.whole_servers(held, 8, shapes)[1] >= held


def test_split_names_the_same_count_as_memory_for_the_whole_job():
    """`split`'s state column is the paper's (no activations); the count it gives for the whole job
    is memory.gpus_to_hold's, as `memory` gives."""
    memory_json = json.loads(command_line("memory", "--model", "llama-3.1-8b", "--method", "full", "--json"))
    split_json = json.loads(
        command_line(
            "split",
            "--model",
            "llama-3.1-8b",
            "--gpu",
            "h100",
            "--nodes",
            "1",
            "--gpus-per-node",
            "2",
            "--json",
        )
    )
    assert split_json["gpus_to_hold"] == memory_json["gpus_needed"]["H100 SXM"] == 3
