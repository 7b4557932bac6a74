"""The course's Runpod pod template (templates/runpod-pod/), checked without Runpod: the
template parses and names the course repository, its start command clones into the volume once,
and start.sh installs from the clone with the tested pins (the image's torch kept) and serves
JupyterLab on the template's port. pip, JupyterLab and git are replaced by stand-ins that record
how they were called."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
POD = ROOT / "templates" / "runpod-pod"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


@pytest.fixture(scope="module")
def template() -> dict:
    return json.loads((POD / "template.json").read_text(encoding="utf-8"))


def test_the_template_describes_a_pod_with_jupyterlab_and_a_volume(template):
    repository = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["repository"]["url"]
    assert template["isServerless"] is False
    assert template["imageName"].startswith("runpod/pytorch:")
    assert template["env"]["COURSE_REPOSITORY"] == repository  # the setup cell reads the same variable
    assert template["env"]["COURSE_DIR"].startswith(template["volumeMountPath"] + "/")  # survives a stop
    assert template["ports"] == ["8888/http"]
    assert template["volumeInGb"] > 0 and template["containerDiskInGb"] > 0
    assert template["dockerStartCmd"][:2] == ["bash", "-c"]


def test_start_sh_is_valid_bash():
    subprocess.run(["bash", "-n", str(POD / "start.sh")], check=True)


def _stand_ins(folder: Path) -> Path:
    """python and git that log their arguments (one call a line) to folder/calls.log."""
    folder.mkdir()
    log = folder / "calls.log"
    (folder / "python").write_text(
        "#!/usr/bin/env bash\n"
        f'echo "python $*" >> {log}\n'
        'for arg in "$@"; do [ -n "${constraint:-}" ] && cp "$arg" '
        f"{folder}/pins.txt; "
        'constraint=; [ "$arg" = --constraint ] && constraint=1; done\n'
        '[ "$1" = -c ] && echo made-up-token\n'
        "exit 0\n"
    )
    (folder / "git").write_text(  # a clone copies what start.sh needs from the source folder
        "#!/usr/bin/env bash\n"
        f'echo "git $*" >> {log}\n'
        'dest="${@: -1}"; src="${@: -2:1}"\n'
        'mkdir -p "$dest/.git" "$dest/templates" && cp -r "$src/templates/runpod-pod" "$dest/templates/" '
        '&& cp "$src/constraints.txt" "$dest/"\n'
    )
    for name in ("python", "git"):
        (folder / name).chmod(0o755)
    return log


def _start(template: dict, tmp_path: Path, password: str = "") -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        **template["env"],
        "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
        "COURSE_REPOSITORY": str(ROOT),
        "COURSE_DIR": str(tmp_path / "workspace" / "course"),
        "JUPYTER_PASSWORD": password,
    }
    return subprocess.run(template["dockerStartCmd"], env=env, capture_output=True, text=True, timeout=60)


def test_the_start_command_clones_once_installs_with_the_pins_and_serves_jupyterlab(template, tmp_path):
    log = _stand_ins(tmp_path / "bin")
    clone = tmp_path / "workspace" / "course"
    first = _start(template, tmp_path)
    assert first.returncode == 0, first.stderr
    calls = log.read_text().splitlines()
    assert calls[0] == f"git clone --depth 1 {ROOT} {clone}"
    assert re.fullmatch(
        rf"python -m pip install --quiet --constraint \S+ --editable {re.escape(str(clone))}\[lab\]", calls[1]
    ), calls[1]
    pins = (tmp_path / "bin" / "pins.txt").read_text().splitlines()
    tested = (ROOT / "constraints.txt").read_text().splitlines()
    assert pins == [line for line in tested if not line.startswith("torch==")]  # the image's torch stays
    assert "made-up-token" in first.stdout  # no password set: the token is printed in the logs
    jupyter = calls[-1]
    port = template["ports"][0].split("/")[0]
    assert jupyter.startswith("python -m jupyter lab --ip=0.0.0.0 ")
    assert f"--port={port}" in jupyter and f"--ServerApp.root_dir={clone}" in jupyter
    assert "--IdentityProvider.token=made-up-token" in jupyter

    log.unlink()
    second = _start(template, tmp_path, password="chosen")
    assert second.returncode == 0, second.stderr
    calls = log.read_text().splitlines()
    assert not [c for c in calls if c.startswith("git ")], "a second start keeps the volume's clone"
    assert "--IdentityProvider.token=chosen" in calls[-1] and "made-up-token" not in second.stdout
