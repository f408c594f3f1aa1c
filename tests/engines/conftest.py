"""Make engine_helpers importable (pytest runs with --import-mode=importlib) and share its fixtures."""

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from engine_helpers import pairs40  # noqa: E402,F401  (a fixture)
