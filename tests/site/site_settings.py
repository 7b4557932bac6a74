"""Where the browser tests find the website and put their artefacts."""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SITE_HTML = os.environ.get("SITE_HTML")  # set by `make test-site`; unset: the tests skip
SITE_SOURCE = Path(os.environ.get("SITE_SOURCE", ROOT))  # the book the site was built from
ARTEFACTS = ROOT / "_build" / "site-test"  # screenshots/ and report.txt (not committed)
SKIP_REASON = "browser tests of the website: run `make test-site` (sets SITE_HTML to the built site)"
