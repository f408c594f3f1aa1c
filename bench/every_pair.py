"""Scoring every pair vs the answered pairs only, on a judge that sometimes fails (fake LM, bundled MSRD dev split).

    python -m bench.every_pair --limit 40

The fake Judge says Relevant when a query word (over 3 letters) is in the item title, which is often right on MSRD;
with failures injected, its label for about one item in five does not parse (the judgment ends in an error). Dropping
the failed pairs (the answered-only view, what the metrics did before) rewards the failing judge; scoring every pair
counts each failure as wrong.
"""

from __future__ import annotations

import argparse
import os
import re
import zlib

os.environ.setdefault("HIERA_RETRY_BASE_DELAY", "0")  # the unparseable label is retried: no backoff sleep

import dspy

import hiera_dspy  # noqa: F401  (first: hiera_dspy.settings sets the process environment dspy reads)
from hiera_dspy.data import load_dataset
from hiera_dspy.knowledge import make_knowledge
from hiera_dspy.methods import BuildContext, build
from hiera_dspy.metrics.classification import classification_metrics
from hiera_dspy.runs.runner import judge_one
from hiera_dspy.testing import role_lms


def _query_and_title(prompt: str) -> tuple[str, str]:
    query, title = re.search(r"\[\[ ## query ## \]\]\n(.*)", prompt), re.search(r"Title: (.*)", prompt)
    return (query.group(1) if query else ""), (title.group(1) if title else "")


def answers(fail: bool) -> dict:
    def label(prompt):
        query, title = _query_and_title(prompt)
        if fail and zlib.crc32(title.encode()) % 5 == 0:
            return "Maybe"
        words = {w for w in re.findall(r"\w+", query.lower()) if len(w) > 3}
        return "Relevant" if words & set(re.findall(r"\w+", title.lower())) else "Irrelevant"

    def clarity(prompt):
        return "unclear" if zlib.crc32(_query_and_title(prompt)[1].encode()) % 2 else "clear"

    return {"label": label, "relational_transparency": clarity}


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--limit", type=int, default=40, help="first N pairs of the MSRD dev split")
    args = p.parse_args(argv)
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    dataset = load_dataset("msrd")
    pairs, labels = dataset.split("dev", args.limit), list(dataset.scheme.labels)
    lines = [f"HIERA with a fake LM, MSRD dev, first {len(pairs)} pairs", "",
             "| judge | errors | coverage | κ every pair | κ answered only | acc every pair | acc answered only |",
             "|---|---|---|---|---|---|---|"]
    for name, fail in (("never fails", False), ("fails to parse ~1 in 5", True)):
        lms = role_lms(answers(fail))
        program = build("hiera", BuildContext(dataset.scheme, lms, make_knowledge("none", dataset)))
        rows = [judge_one(program, pair) for pair in pairs]
        m = classification_metrics([r["gold"] for r in rows], [r["label"] for r in rows], labels)
        a = m["answered_only"]
        lines.append(f"| {name} | {m['unlabelled']} | {m['coverage']:.2f} | {m['kappa']:.3f} | {a['kappa']:.3f} | "
                     f"{m['accuracy']:.3f} | {a['accuracy']:.3f} |")
    text = "\n".join(lines)
    print(text)
    return text


if __name__ == "__main__":
    main()
