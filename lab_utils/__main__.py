"""``python -m lab_utils``: the ``lab-utils`` command through any interpreter that has the course.

It needs no PATH entry, so it works where ``lab-utils`` is "not found": a Jupyter kernel started
from ``.venv`` without ``.venv/bin`` on its PATH (``!{sys.executable} -m lab_utils bench``), or a
terminal where the environment was never activated (``.venv/bin/python -m lab_utils doctor``).
"""

import sys

from lab_utils.cli import main

if __name__ == "__main__":
    sys.exit(main())
