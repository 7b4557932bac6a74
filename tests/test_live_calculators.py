"""The website's live calculators without a browser: the wheels the page loads are built from
this tree, and the commands the page runs need nothing beyond the standard library and those
wheels (what Pyodide's core offers). The browser test is tests/site/test_live_calculators.py."""

import base64
import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
pytest.importorskip("sphinx")
import live_calculators  # noqa: E402

# Only the standard library, lab_utils and the page's wheels may be imported (Pyodide's core).
GUARD = """
import builtins, sys
allowed = set(sys.stdlib_module_names) | {"lab_utils", %r}
real = builtins.__import__
def guarded(name, globals=None, locals=None, fromlist=(), level=0):
    if level == 0 and name.split(".")[0] not in allowed:
        raise ImportError(f"the page has no {name}")
    return real(name, globals, locals, fromlist, level)
builtins.__import__ = guarded
sys.path.insert(0, %r)
from lab_utils import cli
sys.exit(cli.main(sys.argv[1:]))
"""
COMMANDS = [
    ["memory", "--model", "Llama-3.1-8B", "--method", "qlora", "--seq-len", "2048"],
    ["cost", "fine-tune", "--model", "Llama-3.1-8B", "--tokens", "1e8", "--method", "lora", "--gpu", "T4"],
    ["cost", "serve", "--model", "Qwen2.5-7B", "--gpu", "RTX 4090", "--curve"],
    ["pick", "serve", "--model", "Llama-3.1-8B", "--requests-per-day", "1000", "--json"],
    ["pick", "fine-tune", "--model", "Llama-3.2-1B", "--tokens", "1e8", "--method", "full"],
    ["latency", "--model", "Llama-3.1-8B", "--gpu", "H100 SXM", "--rate", "2", "--prompt-len", "1000"]
    + ["--output-len", "200", "--precision", "fp8", "--num-requests", "100"],
]


@pytest.fixture(scope="module")
def site_packages(tmp_path_factory) -> Path:
    """The page's wheels, built as the book builds them and unpacked as the page unpacks them."""
    wheels = tmp_path_factory.mktemp("wheels")
    built = [
        live_calculators.course_wheel(ROOT, wheels),
        *(live_calculators.installed_wheel(name, wheels) for name in live_calculators.PURE_DEPENDENCIES),
    ]
    target = tmp_path_factory.mktemp("site-packages")
    for wheel in built:
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(target)
    return target


def test_the_course_wheel_holds_what_the_pages_commands_use(site_packages):
    """Only the modules and data memory, cost and pick import or read, each as in this tree: the
    page loads no measuring module (torch's) and no notebook helper."""
    shipped = sorted(p for p in (site_packages / "lab_utils").rglob("*") if p.is_file())
    for path in shipped:
        assert path.read_bytes() == (ROOT / path.relative_to(site_packages)).read_bytes(), path
    names = {p.relative_to(site_packages).as_posix() for p in shipped}
    for used in (
        "cli/memory.py",
        "cli/cost.py",
        "cli/pick.py",
        "cli/latency.py",
        "advisor_serving.py",
        "hf_config.py",
        "replica.py",
        "scheduler.py",
    ):
        assert f"lab_utils/{used}" in names  # subpackages and the pasted config's reader included
    for data in ("assumptions", "hardware", "llm_configs", "prices", "engines"):
        assert f"lab_utils/data/{data}.toml" in names
    for unused in ("timing.py", "models.py", "training.py", "memory_measure.py", "data/published.toml"):
        assert (ROOT / "lab_utils" / unused).is_file() and f"lab_utils/{unused}" not in names
    assert list(site_packages.glob("cpu_vs_gpu_course-*.dist-info/METADATA"))
    assert (site_packages / "tabulate" / "__init__.py").is_file()


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_the_pages_commands_need_only_the_standard_library_and_its_wheels(site_packages, argv):
    guard = GUARD % (live_calculators.PURE_DEPENDENCIES[0], str(site_packages))
    alone = subprocess.run(
        [sys.executable, "-I", "-c", guard, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=site_packages,
    )
    here = subprocess.run(
        [sys.executable, "-m", "lab_utils.cli", *argv], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert alone.returncode == 0, alone.stderr[-2000:]
    assert alone.stdout == here.stdout


def test_the_form_offers_every_catalog_model_and_gpu():
    from lab_utils import assumptions, hardware, llms

    form = live_calculators.form_html(ROOT)
    for name in [m.name for m in llms.catalog()] + [s.name for s in hardware.catalog("gpu")]:
        assert f'<option value="{name}"' in form or f'<option value="{name}" selected' in form
    assert (
        form.count("<select") == 5  # model, GPU, method; latency's load and precision
        and form.count("<input") == 8
        and form.count('<textarea name="config"') == 1
    )
    assert 'data-state="loading"' in form
    for name, assumption in (("slo_ttft_ms", "slo_ttft_s"), ("slo_tpot_ms", "slo_tpot_s")):
        assert (
            f'name="{name}" type="number" min="0" step="any" value="{assumptions.value(assumption) * 1e3:g}"'
            in form
        )


@pytest.mark.parametrize(
    "argv",
    [
        ["memory", "--model", "Llama-3.1-8B", "--method", "lora"],
        ["cost", "fine-tune", "--model", "Llama-3.2-1B", "--tokens", "1e8", "--method", "lora"],
        ["pick", "serve", "--model", "Llama-3.1-8B", "--requests-per-day", "1000"],
        ["latency", "--model", "Llama-3.2-1B", "--gpu", "T4", "--concurrency", "2", "--prompt-len", "100"]
        + ["--output-len", "20", "--num-requests", "10"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_one_run_gives_the_text_and_the_json_the_page_shows(argv, monkeypatch, capsys):
    """The page runs each command once: cli.main(json_answer=...) prints the text of a plain run
    and hands on the text --json prints, asking the calculators once (advisor.serve here)."""
    from lab_utils import advisor, cli

    assert cli.main([*argv, "--json"]) == 0
    alone = capsys.readouterr().out
    assert cli.main(argv) == 0
    text = capsys.readouterr().out
    calls, answers = [], []
    serve = advisor.serve
    monkeypatch.setattr(advisor, "serve", lambda *a, **k: calls.append(a) or serve(*a, **k))
    assert cli.main(argv, json_answer=answers.append) == 0
    assert capsys.readouterr().out == text
    assert answers == [alone.rstrip("\n")]
    assert len(calls) == (1 if argv[:2] == ["pick", "serve"] else 0)


def test_the_service_worker_pins_every_file_it_keeps_by_its_hash(tmp_path):
    wheel = tmp_path / "a.whl"
    wheel.write_bytes(b"wheel bytes")
    pinned = {"live/a.whl": live_calculators._sha256(wheel)}
    worker = live_calculators.write_service_worker(tmp_path / "root", pinned).read_text(encoding="utf-8")
    assert (
        pinned["live/a.whl"] == "sha256-" + base64.b64encode(hashlib.sha256(b"wheel bytes").digest()).decode()
    )
    assert json.dumps(pinned, indent=1) in worker and "__PINNED__" not in worker
    version = worker.split('const CACHE = "live-calculators-', 1)[1].split('"', 1)[0]
    pinned["live/a.whl"] = "sha256-other"
    again = live_calculators.write_service_worker(tmp_path / "again", pinned).read_text(encoding="utf-8")
    assert len(version) == 16 and f"live-calculators-{version}" not in again  # other files, another cache


def test_the_wheels_get_the_pyc_pyodide_compiles_and_their_record_names_them(tmp_path, monkeypatch):
    """live_pyc adds each .pyc beside its source's __pycache__ and to RECORD (path, SHA-256, size);
    with no compiler (no Node.js) the wheel is left byte for byte as it was. The compiler is
    replaced here: running Pyodide in Node.js is the website build's part."""
    import live_pyc

    wheel = tmp_path / "w-1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("w/__init__.py", "X = 1\n")
        archive.writestr("w/data.toml", "a = 1\n")
        archive.writestr("w-1.dist-info/RECORD", "w/__init__.py,sha256=x,6\nw-1.dist-info/RECORD,,\n")
    before = wheel.read_bytes()
    monkeypatch.setattr(live_pyc, "compiled_by_pyodide", lambda sources, pyodide: None)
    assert live_pyc.add_pyc([wheel], tmp_path) == 0 and wheel.read_bytes() == before
    asked = []
    fake = {"w/__pycache__/__init__.cpython-314.pyc": b"bytecode"}
    monkeypatch.setattr(
        live_pyc, "compiled_by_pyodide", lambda sources, pyodide: asked.append(sources) or fake
    )
    assert live_pyc.add_pyc([wheel], tmp_path) == 1
    assert asked == [{"w/__init__.py": "X = 1\n"}]
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read("w/__pycache__/__init__.cpython-314.pyc") == b"bytecode"
        record = archive.read("w-1.dist-info/RECORD").decode().splitlines()
    digest = base64.urlsafe_b64encode(hashlib.sha256(b"bytecode").digest()).rstrip(b"=").decode()
    assert record == [
        "w/__init__.py,sha256=x,6",
        f"w/__pycache__/__init__.cpython-314.pyc,sha256={digest},8",
        "w-1.dist-info/RECORD,,",
    ]


def test_the_pages_python_answers_as_the_cli_and_writes_the_readers_config(tmp_path, monkeypatch, capsys):
    """live_answer.py, run as the worker runs it (its text in a fresh namespace): one command's
    text and --json answer, the CLI's one-line error for a config it cannot read, and the
    reader's config.json written where --model finds it, then removed."""
    from lab_utils import cli

    monkeypatch.chdir(tmp_path)
    page = {"__name__": "__main__"}
    exec((ROOT / "book" / "_ext" / "live_answer.py").read_text(encoding="utf-8"), page)
    argv = ["memory", "--model", "Llama-3.1-8B", "--method", "lora"]
    answered = json.loads(page["answer"](json.dumps(argv)))
    assert cli.main([*argv, "--json"]) == 0
    assert answered["status"] == 0 and answered["stderr"] == ""
    assert answered["json"] == capsys.readouterr().out.rstrip("\n")
    assert answered["stdout"].startswith("Llama-3.1-8B")
    assert page["write_config"]("{") == "config.json" and (tmp_path / "config.json").read_text() == "{"
    broken = json.loads(page["answer"](json.dumps(["memory", "--model", "config.json"])))
    assert broken["status"] != 0 and broken["json"] is None and broken["stderr"].count("\n") == 1
    assert page["write_config"]("") == "config.json" and not (tmp_path / "config.json").exists()


def test_no_snapshot_without_node_or_with_a_command_that_fails(tmp_path, monkeypatch):
    """live_snapshot keeps no file (and says False) when Node.js or Pyodide fails, or when one of
    the commands it runs before the snapshot does not answer. Running Pyodide in Node.js is the
    website build's part (the browser test restores what it kept)."""
    import live_pyc
    import live_snapshot

    target = tmp_path / "memory.gz"
    monkeypatch.setattr(live_pyc, "in_node", lambda script, pyodide, stdin_text: None)
    assert live_snapshot.make_snapshot([], tmp_path, "", [["memory"]], target) is False
    assert not target.exists()

    def fails_once_written(script, pyodide, stdin_text):
        Path(json.loads(stdin_text)["snapshot"]).write_bytes(b"memory")
        return json.dumps({"statuses": [0, 2]})

    monkeypatch.setattr(live_pyc, "in_node", fails_once_written)
    assert live_snapshot.make_snapshot([], tmp_path, "", [["memory"], ["pick"]], target) is False
    assert not target.exists()


def test_the_kept_memory_leaves_out_its_pages_of_zeros_and_reads_back_whole():
    """live_snapshot.sparse: runs of pages that are not all zeros, adjacent ones merged, a short
    last page kept; read back as live-worker.js's wholeMemory reads it, it is the memory again."""
    import struct

    import live_snapshot

    page = live_snapshot.PAGE_BYTES
    memory = bytearray(page * 6 + 100)
    memory[page * 1 + 5] = 1  # pages 1 and 2: one run
    memory[page * 3 - 1] = 2
    memory[page * 5 + 7] = 3  # page 5 alone, then the short last page with a byte
    memory[-1] = 4
    kept = live_snapshot.sparse(bytes(memory))
    length, count = struct.unpack_from("<2I", kept)
    runs = [struct.unpack_from("<2I", kept, 8 + 8 * i) for i in range(count)]
    assert length == len(memory) and runs == [(page, 2 * page), (5 * page, page + 100)]
    whole, at = bytearray(length), 8 + 8 * count
    for offset, size in runs:
        whole[offset : offset + size] = kept[at : at + size]
        at += size
    assert at == len(kept) and whole == memory
    assert live_snapshot.sparse(bytes(page)) == struct.pack("<2I", page, 0)  # zeros only: no run
