"""Make method_helpers importable from the test modules (pytest runs with --import-mode=importlib)."""
import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
