"""``python -m lab_utils.cli``: the ``lab-utils`` command, as ``python -m lab_utils`` runs it."""

import sys

from lab_utils.cli import main

if __name__ == "__main__":
    sys.exit(main())
