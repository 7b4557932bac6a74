"""Shared test settings: draw figures off-screen."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")
