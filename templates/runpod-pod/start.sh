#!/usr/bin/env bash
# The course's Runpod pod, at every start: template.json's start command clones the course into
# the pod's volume once, then runs this script from that clone. It installs the course with the
# tested pins of constraints.txt except torch (the image's CUDA build of torch stays: the course
# needs torch>=2.2), then serves JupyterLab on port 8888, opened on notebook 00.
# Tested offline by tests/test_runpod_pod.py (with pip and JupyterLab replaced by stand-ins).
set -euo pipefail

course_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
pins=$(mktemp)
trap 'rm -f "$pins"' EXIT
grep -v -E '^torch==' "$course_dir/constraints.txt" > "$pins"
echo "Installing the course from $course_dir (the image's torch stays) ..."
python -m pip install --quiet --constraint "$pins" --editable "$course_dir[lab]"
rm -f "$pins"
trap - EXIT

if [ -z "${JUPYTER_PASSWORD:-}" ]; then
  JUPYTER_PASSWORD=$(python -c "import secrets; print(secrets.token_urlsafe(18))")
  echo "No JUPYTER_PASSWORD in the pod's environment; JupyterLab's token for this start: $JUPYTER_PASSWORD"
fi
# allow_origin: the page comes through Runpod's proxy (https://POD-8888.proxy.runpod.net); the
# token still guards the server.
exec python -m jupyter lab --ip=0.0.0.0 --port=8888 --no-browser --allow-root \
  --ServerApp.root_dir="$course_dir" --ServerApp.allow_origin='*' \
  --IdentityProvider.token="$JUPYTER_PASSWORD" \
  --ServerApp.default_url=/lab/tree/notebooks/00_start_here.ipynb
