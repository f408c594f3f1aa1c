"""A run's output folder, written the same way by every CLI that judges (eval.run, optimize.compile)."""

from __future__ import annotations

import json
from pathlib import Path

from hiera_dspy.records import Judgment, write_predictions


def write_outputs(out: Path, identity: dict, metrics: dict, rows: list[Judgment]) -> None:
    """A run's folder: config.json (its identity), metrics.json and predictions.jsonl (one judgment a line,
    `Judgment.prediction_line`)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(identity, indent=1, default=str))
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1))
    write_predictions(out / "predictions.jsonl", rows)
