"""The workshop kit: the CLI through the kernel's own Python, the workshop settings in one place,
Makefile's Python check, the schedules' sums and the offline install (issue 27)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lab_utils import course

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
sys.path.insert(0, str(ROOT / "scripts"))
import workshop  # noqa: E402  (book/_ext/workshop.py)
import workshop_settings  # noqa: E402  (scripts/workshop_settings.py)

BIN = Path(sys.executable).parent  # the environment's bin folder: .venv/bin
CLI_CALL = re.compile(r"!\{sys\.executable\} -m lab_utils (?P<args>[^\n]+)")


def notebook_cli_calls():
    """(notebook, arguments) of every CLI call in the notebooks' code cells."""
    return [
        (path.name, match["args"])
        for path in course.notebook_paths(ROOT / "notebooks")
        for cell in course.read_cells(path)
        if cell["cell_type"] == "code"
        for match in CLI_CALL.finditer(cell["source"])
    ]


def test_no_notebook_calls_a_bare_lab_utils_command():
    bare = [
        (path.name, line)
        for path in course.notebook_paths(ROOT / "notebooks")
        for cell in course.read_cells(path)
        if cell["cell_type"] == "code"
        for line in cell["source"].splitlines()
        if re.search(r"!\s*lab-utils\b", line)
    ]
    assert bare == [], (
        "call the CLI as !{sys.executable} -m lab_utils ...: a kernel may lack .venv/bin on its PATH"
    )
    assert notebook_cli_calls(), "notebook 03 checks the command line against the calculator"


def test_every_notebook_cli_call_works_in_a_kernel_whose_path_lacks_the_environments_bin():
    from jupyter_client.manager import start_new_kernel

    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if Path(p) != BIN)
    assert (
        shutil.which("lab-utils", path=path) is None
        or Path(shutil.which("lab-utils", path=path)).parent != BIN
    )
    env = dict(os.environ, PATH=path)
    env.pop("VIRTUAL_ENV", None)
    manager, client = start_new_kernel(kernel_name="python3", env=env, cwd=str(ROOT / "notebooks"))
    try:

        def run(code):
            output = []
            client.execute(code)
            while True:
                message = client.get_iopub_msg(timeout=120)
                if message["msg_type"] == "stream":
                    output.append(message["content"]["text"])
                elif message["msg_type"] == "error":
                    output.append("\n".join(message["content"]["traceback"]))
                elif message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
                    return "".join(output)

        assert "lab_utils" not in run("import sys, os\nprint(os.environ['PATH'])")
        bare = run("!lab-utils --version\nprint('exit status', _exit_code)")
        assert "exit status 0" not in bare  # what a learner saw: "lab-utils: not found"
        for notebook, args in notebook_cli_calls():
            out = run(f"!{{sys.executable}} -m lab_utils {args}\nprint('exit status', _exit_code)")
            assert out.rstrip().endswith("exit status 0"), (notebook, args, out)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_python_m_lab_utils_is_the_command_line():
    result = subprocess.run(
        [sys.executable, "-m", "lab_utils", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, PATH=""),
    )
    assert result.returncode == 0 and result.stdout.startswith("lab-utils ")


# --- one place for the workshop's settings ---------------------------------------------------


def test_the_repository_in_config_and_every_setup_cell_is_the_one_in_workshop_toml():
    assert workshop_settings.main(["--check"]) == 0, "run: python scripts/workshop_settings.py"


def test_a_fork_changes_one_file_and_the_script_updates_the_rest(tmp_path):
    settings = dict(workshop.read(ROOT), repository_url="https://github.com/someone/fork", branch="june")
    config = workshop_settings.updated(ROOT / "_config.yml", settings)
    assert "  url: https://github.com/someone/fork\n" in config and "  branch: june\n" in config
    template = workshop_settings.updated(ROOT / "templates" / "notebook.ipynb", settings)
    assert '\\"COURSE_REPOSITORY\\", \\"https://github.com/someone/fork\\")' in template
    badge = "https://colab.research.google.com/github/cpu-vs-gpu-for-ai/course/blob/main/notebooks/00_start_here.ipynb"
    page = tmp_path / "page.ipynb"
    page.write_text(f'"[![Open in Colab](x.svg)]({badge})"', encoding="utf-8")
    assert "colab.research.google.com/github/someone/fork/blob/june/notebooks/" in workshop_settings.updated(
        page, settings
    )
    with pytest.raises(ValueError, match="repository_url"):
        workshop_settings.github_path("https://gitlab.com/someone/fork")


def test_pages_fill_the_settings_or_their_fallbacks():
    settings = dict(workshop.read(ROOT), contact="ada@example.org", check_deadline="")
    text = (
        "Mail {{ workshop.contact }} by {{workshop.check_deadline}}: git clone {{ workshop.repository_url }}"
    )
    assert workshop.fill(text, settings) == (
        f"Mail ada@example.org by {workshop.FALLBACKS['check_deadline']}: "
        f"git clone {settings['repository_url']}"
    )
    with pytest.raises(ValueError, match="no setting 'contakt'"):
        workshop.fill("{{ workshop.contakt }}", settings)


def test_every_page_names_only_settings_that_exist_and_the_learner_page_uses_them():
    settings = workshop.read(ROOT)
    for page in sorted((ROOT / "book").glob("*.md")):
        workshop.fill(page.read_text(encoding="utf-8"), settings)  # raises on an unknown name
    learner = (ROOT / "book" / "before-you-come.md").read_text(encoding="utf-8")
    assert {"contact", "check_deadline", "shared_folder", "website_url"} <= set(
        workshop.TOKEN.findall(learner)
    )
    cheat = (ROOT / "book" / "cheat-sheet.md").read_text(encoding="utf-8")
    assert {"repository_url", "website_url", "contact"} <= set(workshop.TOKEN.findall(cheat))
    typed = [
        page.name
        for page in (ROOT / "book").glob("*.md")
        if settings["repository_url"] in page.read_text(encoding="utf-8")
    ]
    assert typed == [], "write {{ workshop.repository_url }}, not the address"


def test_ready_lists_the_empty_settings_and_fails_until_every_one_is_filled(capsys):
    settings = workshop.read(ROOT)
    filled = {name: text or f"filled {name}" for name, text in settings.items()}
    assert workshop_settings.ready(filled) == 0
    assert workshop_settings.ready(dict(filled, contact="", notes_document="")) == 1
    printed = capsys.readouterr().out.split("still empty")[-1]
    assert "contact" in printed and "notes_document" in printed and "dates" not in printed
    shipped = workshop_settings.main(["--ready"])
    assert shipped == (1 if workshop.empty(settings) else 0)


def test_the_pre_workshop_email_and_the_room_name_every_setting_a_learner_needs():
    kit = (ROOT / "book" / "workshop-kit.md").read_text(encoding="utf-8")
    email = kit[kit.index("(pre-workshop-email)=") : kit.index("(collect-bench-files)=")]
    assert set(workshop.FALLBACKS) <= set(workshop.TOKEN.findall(email))
    assert "workshop_settings.py --ready" in email
    guide = (ROOT / "book" / "instructor-guide.md").read_text(encoding="utf-8")
    _, blocks, _ = plans()
    scripts = guide[guide.index("(block-scripts)=") : guide.index("## During the workshop")]
    for block in blocks:
        if "break" not in block and block != "lunch":
            label = block.split(":")[0].capitalize()
            stated = re.search(rf"\*\*{re.escape(label)}[^(]*\((\d+) min", scripts)
            assert stated, f"the instructor guide has no script for {block!r}"
            assert int(stated[1]) == blocks[block], f"{block!r}: the script and book/schedule.toml disagree"
    assert {"notes_document", "code_of_conduct"} <= set(workshop.TOKEN.findall(guide))


def test_settings_refuse_a_start_that_is_not_a_clock_time(tmp_path):
    text = (ROOT / "workshop.toml").read_text(encoding="utf-8").replace('start = "09:00"', 'start = "9am"')
    (tmp_path / "workshop.toml").write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match="start='9am'"):
        workshop.read(tmp_path)


# --- Makefile: Python 3.10 or newer ----------------------------------------------------------


def learners_make(*args, **options):
    """``make`` as a learner types it: not nested in another make (make test runs these tests
    under make -j2, whose MAKEFLAGS and MAKELEVEL would add jobserver warnings and make[N] lines)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    return subprocess.run(["make", *args], cwd=ROOT, capture_output=True, text=True, env=env, **options)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_refuses_an_old_python_in_one_line(tmp_path):
    old = tmp_path / "python3.9"
    old.write_text("#!/bin/sh\n[ \"$1\" = --version ] && echo 'Python 3.9.6' && exit 0\nexit 1\n")
    old.chmod(0o755)
    result = learners_make("-s", "setup-lab", f"PYTHON={old}", f"VENV={tmp_path / 'venv'}", timeout=60)
    assert result.returncode != 0 and not (tmp_path / "venv").exists()
    message = [line for line in result.stderr.splitlines() if not line.startswith("make:")]
    assert len(message) == 1 and "Python 3.10 or newer" in message[0] and "Python 3.9.6" in message[0]


# --- schedules: the sums ---------------------------------------------------------------------

SCHEDULE = ROOT / "book" / "schedule.toml"


def plans():
    return course.read_plans(SCHEDULE, ROOT / "notebooks")


def test_every_notebook_has_a_plan_whose_sections_are_its_headings():
    notebook_plans, _, _ = plans()
    for path in course.notebook_paths(ROOT / "notebooks"):
        plan = notebook_plans[path.name[:2]]
        headings = {
            line[3:].strip()
            for cell in course.read_cells(path)
            if cell["cell_type"] == "markdown"
            for line in cell["source"].splitlines()
            if line.startswith("## ")
        }
        missing = [name for name, _ in plan.sections if name not in headings]
        assert missing == [], f"{path.name}: book/schedule.toml names sections the notebook does not have"
        unplanned = (
            headings
            - {name for name, _ in plan.sections}
            - {"Learning objectives", "Questions", "Set up", "Exercises", "Summary"}
        )
        assert unplanned == set(), f"{path.name}: give these sections minutes in book/schedule.toml"
        assert plan.exercise is not None and plan.exercise.minutes > 0, (
            f"{path.name}: choose an in-class exercise"
        )
        assert all(minutes > 0 for _, minutes in plan.sections)


def is_break(block):
    return block in ("break", "short break", "lunch")


def test_no_day_runs_more_than_90_minutes_without_a_break():
    notebook_plans, blocks, days = plans()
    for name, items in days.items():
        stretch = 0
        for block, _, minutes in course.day_minutes(items, notebook_plans, blocks):
            stretch = 0 if is_break(block) else stretch + minutes
            assert stretch <= 90, f"{name}: {stretch} minutes without a break by the end of {block!r}"


def test_the_half_day_is_210_minutes():
    notebook_plans, blocks, days = plans()
    half = course.day_minutes(days["Half day (3.5 h)"], notebook_plans, blocks)
    assert sum(minutes for _, _, minutes in half) == 210


def test_the_full_day_has_a_midpoint_check():
    notebook_plans, blocks, days = plans()
    full = course.day_minutes(days["Full day"], notebook_plans, blocks)
    total = sum(minutes for _, _, minutes in full)
    check = next(start for name, start, _ in full if name.startswith("midpoint check"))
    assert total / 3 <= check <= 2 * total / 3


def required_notebooks(header):
    """The notebooks a header's prerequisites require: linked, or named ("notebooks 03 and 05")
    in a part of the line that does not say it only helps."""
    parts = header.prerequisites.split(";")
    return {number for part in parts if "help" not in part for number in re.findall(r"\b(\d{2})\b", part)}


def test_every_notebook_of_a_day_comes_after_the_notebooks_it_requires():
    notebook_plans, _, days = plans()
    headers = {path.name[:2]: course.read_header(path) for path in course.notebook_paths(ROOT / "notebooks")}
    assert required_notebooks(headers["08"]) == {"00", "03", "04", "05"}
    assert required_notebooks(headers["10"]) == {"00", "07"}
    before = {"Half day (3.5 h)": [], "Full day": [], "Second day": days["Full day"]}
    for name, items in days.items():
        seen = set(before[name])
        for item in items:
            if item in notebook_plans:
                missing = required_notebooks(headers[item]) - seen
                assert missing == set(), f"{name}: notebook {item} needs {sorted(missing)} first"
                seen.add(item)


def test_the_class_roofline_opens_notebook_02_and_nobody_benches_in_the_room():
    _, blocks, days = plans()
    for name, items in days.items():
        if "02" in items:
            assert items[items.index("02") - 1] == "class roofline on the projector", name
        assert not any("bench" in item for item in items), (
            f"{name}: the bench files come from Before you come"
        )
    assert not any("bench" in block for block in blocks)


def test_a_notebooks_time_in_class_is_its_sections_plus_its_exercise():
    notebook_plans, _, _ = plans()
    plan = notebook_plans["02"]
    exercise = {e.number: e for e in course.read_exercises(plan.path)}[1]
    assert plan.minutes == sum(minutes for _, minutes in plan.sections) + exercise.minutes
    assert 0 < plan.minutes_saved_if_late < plan.minutes


def test_a_schedule_that_names_a_missing_exercise_or_section_is_refused(tmp_path):
    text = SCHEDULE.read_text(encoding="utf-8")
    (tmp_path / "bad.toml").write_text(text.replace("in_class = 3", "in_class = 9"), encoding="utf-8")
    with pytest.raises(ValueError, match="notebook 07: in_class=9"):
        course.read_plans(tmp_path / "bad.toml", ROOT / "notebooks")
    (tmp_path / "bad.toml").write_text(
        text.replace('skip_if_late = ["The course map"]', 'skip_if_late = ["Maps"]'), encoding="utf-8"
    )
    with pytest.raises(ValueError, match="skip_if_late names no section"):
        course.read_plans(tmp_path / "bad.toml", ROOT / "notebooks")


def test_the_instructor_guide_states_no_minutes_of_its_own():
    guide = (ROOT / "book" / "instructor-guide.md").read_text(encoding="utf-8")
    assert re.findall(r"\bAllow \d+ minutes", guide) == [], "the guide's minutes come from book/schedule.toml"
    assert "schedule.toml" in guide


# --- the offline bundle: installs with pip's index switched off ------------------------------


def test_the_offline_bundle_installs_into_a_fresh_environment_with_no_network(tmp_path):
    """A small bundle (the course's own wheel; its dependencies come from this environment,
    visible to the fresh one through a .pth file) installs with the bundle's own command."""
    pytest.importorskip("sphinx")  # the bundle reuses the website's course.zip builder
    import zipfile

    import offline_bundle

    wheels = tmp_path / "wheels"
    wheels.mkdir()
    offline_bundle.course_wheel(wheels)
    archive = offline_bundle.bundle(tmp_path / "course-offline.zip", wheels, ["linux"], ["3.11"])
    with zipfile.ZipFile(archive) as bundle:
        bundle.extractall(tmp_path / "unzipped")
    folder = tmp_path / "unzipped" / offline_bundle.course_site.COURSE_ZIP_FOLDER
    assert offline_bundle.INSTALL in (folder / "OFFLINE.md").read_text(encoding="utf-8")
    assert {"notebooks", "lab_utils", "constraints.txt", "workshop.toml"} <= {
        p.name for p in folder.iterdir()
    }

    venv = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    ours = Path(
        subprocess.run(
            [sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    deps = tmp_path / "deps"  # this environment's packages (pip among them), less the course itself
    deps.mkdir()
    for entry in ours.iterdir():
        if "cpu_vs_gpu_course" not in entry.name and not entry.name.endswith(".pth"):
            (deps / entry.name).symlink_to(entry)
    (site / "deps.pth").write_text(f"{deps}\n", encoding="utf-8")

    env = {name: value for name, value in os.environ.items() if not name.startswith("PIP_")}
    env.update(
        PIP_CONFIG_FILE=os.devnull,
        HTTP_PROXY="http://127.0.0.1:9",
        HTTPS_PROXY="http://127.0.0.1:9",
        http_proxy="http://127.0.0.1:9",
        https_proxy="http://127.0.0.1:9",
    )  # any download would fail
    command = offline_bundle.INSTALL.split()
    assert command[:5] == ["python", "-m", "pip", "install", "--no-index"]
    install = subprocess.run(
        [str(python), *command[1:-1], command[-1].strip('"')],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    assert "Successfully installed cpu-vs-gpu-course" in install.stdout
    check = subprocess.run(
        [python, "-m", "lab_utils", "--version"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    where = subprocess.run(
        [python, "-c", "import lab_utils; print(lab_utils.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    ).stdout
    assert check.returncode == 0 and check.stdout.startswith("lab-utils ")
    assert Path(where.strip()).is_relative_to(venv)  # installed from the bundle, not this clone


def test_the_helpers_page_gives_the_bundles_own_install_command():
    import offline_bundle

    kit = (ROOT / "book" / "workshop-kit.md").read_text(encoding="utf-8")
    assert f".venv/bin/{offline_bundle.INSTALL}" in kit


def test_directive_exercises_become_plain_markdown(tmp_path):
    import json

    import plain_exercises

    fold = course.SOLUTION_FOLD
    markdown = (
        f"## Exercises\n\n```{{exercise}}\n:label: a\n\nWhat is $2^3$?\n```\n\n{fold[0]}\n\n"
        f"```{{solution}} a\n:class: dropdown\n\nEight.\n```\n\n{fold[1]}\n"
    )
    path = tmp_path / "10_x.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": "markdown", "metadata": {}, "source": markdown}]}))
    assert plain_exercises.convert(path, minutes=5) == 1
    assert course.read_exercises(path) == [course.Exercise(1, 5, "What is $2^3$?", "Eight.")]
    assert ":label:" not in path.read_text()


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_rebuilds_a_venv_made_by_an_old_python(tmp_path):
    def fake_python(path, version, ok):
        """A stand-in: prints ``version``; ``-c`` (the version check) exits 0 when ``ok``;
        ``-m venv DIR`` makes DIR/bin/python a new stand-in; anything else (pip) succeeds."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"""#!/bin/sh
case "$1" in
  --version) echo '{version}' ;;
  -c) exit {0 if ok else 1} ;;
  -m) [ "$2" = venv ] && mkdir -p "$3/bin" && cp "$0" "$3/bin/python" ;;
esac
exit 0
""")
        path.chmod(0o755)

    venv = tmp_path / "venv"
    fake_python(venv / "bin" / "python", "Python 3.9.6", ok=False)  # a .venv an old python3 made
    fake_python(tmp_path / "python3.12", "Python 3.12.4", ok=True)
    result = learners_make("-s", "setup-lab", f"PYTHON={tmp_path / 'python3.12'}", f"VENV={venv}", timeout=60)
    assert result.returncode == 0, result.stderr
    assert "made by Python 3.9.6, too old: making it again" in result.stdout
    assert "Python 3.12.4" in (venv / "bin" / "python").read_text() and (venv / ".installed-lab").exists()


# --- slides: one offline deck per day ----------------------------------------------------------


def test_each_day_has_an_offline_deck_with_its_notebooks_prompts_key_points_and_the_class_roofline(tmp_path):
    import html

    import slides  # book/_ext/slides.py

    notebook_plans, _, days = plans()
    written = slides.write_decks(ROOT, tmp_path)
    assert sorted(path.name for path in written) == sorted(slides.day_file(day) for day in days)
    for day, items in days.items():
        text = (tmp_path / slides.day_file(day)).read_text(encoding="utf-8")
        fetched = re.findall(
            r'<(?:script|img|link|iframe|video)\b[^>]*\b(?:src|href)="(?!data:)([^"]*)"', text
        )
        assert fetched == [], f"{day}: the deck must open offline, but loads {fetched}"
        shown = html.unescape(re.sub(r"<[^>]+>", "", text))
        for item in items:
            if item not in notebook_plans:
                continue
            header = course.read_header(notebook_plans[item].path)
            assert header.title in shown and re.sub(r"[`*]", "", header.objectives[0])[:30] in shown
            assert all(re.sub(r"`", "", name) in shown for name, _ in notebook_plans[item].sections)
            assert f"{item} · key points" in shown
        if "02" in items:
            assert "data:image/png;base64," in text and 'alt="The class roofline' in text
            assert "<strong>Predict" in text
        assert not re.search(r"\$\$|\\(?:frac|text|times|cdot)\b", text), f"{day}: TeX left raw"
    config = (ROOT / "_config.yml").read_text(encoding="utf-8")
    assert re.search(r"^    slides: book/_ext", config, re.MULTILINE), "the website build writes the decks"


def test_slides_show_inline_math_as_plain_symbols():
    import slides

    assert '<code class="math">2n^3 × n</code>' in slides.markdown("The product takes $2n^3 \\times n$.")
    shown = slides.markdown(
        "$$\\text{s per token} \\ge \\frac{\\text{bytes}}{\\text{bandwidth}}$$ costs \\$2 or \\$3"
    )
    assert (
        '<pre class="math">s per token ≥ (bytes) / (bandwidth)</pre>' in shown and "costs $2 or $3" in shown
    )


def test_the_offline_bundle_tries_every_python_and_leaves_out_one_without_wheels(
    tmp_path, monkeypatch, capsys
):
    pytest.importorskip("sphinx")  # offline_bundle imports the website's course.zip builder
    import offline_bundle

    def fake_run(command, check):
        python = command[command.index("--python-version") + 1]
        if python == "3.14":
            raise subprocess.CalledProcessError(1, command)
        (Path(command[command.index("--dest") + 1]) / f"pkg-cp{python.replace('.', '')}.whl").write_text("")

    monkeypatch.setattr(offline_bundle.subprocess, "run", fake_run)
    assert offline_bundle.download(tmp_path, ["linux"], ["3.13", "3.14"], skip_missing=True) == ["3.13"]
    assert "Python 3.14 left out" in capsys.readouterr().out
    assert [path.name for path in tmp_path.glob("*.whl")] == ["pkg-cp313.whl"]
    with pytest.raises(subprocess.CalledProcessError):
        offline_bundle.download(tmp_path, ["linux"], ["3.14"], skip_missing=False)
    requires = re.search(r'requires-python = ">=(\d+\.\d+)"', (ROOT / "pyproject.toml").read_text())[1]
    assert offline_bundle.PYTHONS[0] == requires and offline_bundle.PYTHONS[-1] == "3.14"


def test_learners_setup_pages_cover_every_machine_of_a_mixed_room():
    setup = (ROOT / "book" / "setup.md").read_text(encoding="utf-8")
    before = (ROOT / "book" / "before-you-come.md").read_text(encoding="utf-8")
    kit = (ROOT / "book" / "workshop-kit.md").read_text(encoding="utf-8")
    for page in (setup, before):
        assert "python3-venv" in page and "download.pytorch.org/whl/cpu" in setup
        assert "setup-macos-intel" in page and "setup-linux" in before
    assert "USE_LIBUV" in setup and "USE_LIBUV" in kit
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    learners = makefile[makefile.index("$(LAB_INSTALLED):") :].split("\n\n")[0]
    assert "pip install" in learners and "--quiet" not in learners, "learners see the install's progress"


# --- Carpentries-grade notebooks -----------------------------------------------------------------


def test_the_glossary_defines_the_terms_of_the_scaling_and_serving_notebooks():
    glossary = (ROOT / "book" / "glossary.md").read_text(encoding="utf-8")
    terms = ("All-reduce", "FSDP", "NVLink", "Percentile", "Pipeline parallelism", "Tensor parallelism")
    for term in (*terms, "TTFT", "TPOT", "p95"):
        assert re.search(rf"^{re.escape(term)}$", glossary, re.MULTILINE), f"the glossary lacks {term}"
