"""A run's output folder, written the same way by every CLI that judges (eval.run, optimize.compile)."""

from __future__ import annotations

import json
from pathlib import Path


def write_outputs(out: Path, identity: dict, metrics: dict, rows: list[dict]) -> None:
    """A run's folder: config.json (its identity), metrics.json and predictions.jsonl (one judgment a line)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(identity, indent=1, default=str))
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1))
    with open(out / "predictions.jsonl", "w") as fh:
        for r in rows:
            fh.write(json.dumps({k: r.get(k) for k in ("id", "gold", "label", "human_label", "error", "escalated",
                                                       "delegated", "tokens", "lm_calls", "seconds", "fields")},
                                default=str) + "\n")
