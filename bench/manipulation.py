"""Manipulation benchmark (issue 24): flip rate per attack family and method, and clean kappa, on held-out MSRD pairs.

    python -m bench.manipulation --method embed-lr --pairs 100 --tag after            # every phrasing of each family
    python -m bench.manipulation --method zero-shot --pairs 20 --per-pair 1 --tag after   # under the model lock
    python -m bench.manipulation --restored --splits train,test,review                 # what the screen restores
    python -m bench.manipulation --report                                              # the table from every run

Pairs: judged MSRD pool pairs whose query is in neither train.jsonl nor dev.jsonl (never seen by any fitted or tuned
judge), half relevant, one pair per query, drawn with `--seed`. Each attack (`hiera_dspy.untrusted.families`) pushes
toward the label opposite the gold one; a flip is a hostile copy labelled otherwise than the same judge's clean copy;
the control appends a neutral sentence. Families are reported on their `test` phrasings and on the `review` ones
(written after the generalised screen; `--splits train,test,review` adds the phrasings defences were tuned on).
`--restored` counts the hostile copies whose screened item equals the clean copy's: a judge reads only the screened
item, so those cannot flip a deterministic, cached judge; the others are what a judge has to be run on. Learned
judges are fitted on train.jsonl (`--augment` adds hostile copies of the train pairs, train phrasings only, gold
labels kept).

"Before" is the code without the defences: run this file from a checkout of the commit before them with `--tag
before` (it needs `hiera_dspy.untrusted.families` and `msrd_pool.pool_item_text` beside it). LLM methods go through the resumable run store
(`--chunk N` stops after N new judgments); embed-lr is judged in batches with the runner's screening. Each run writes
OUT/METHOD-TAG.json (`--out`, default bench/results/manipulation); `--report` joins them into OUT.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import random
import re
from collections import defaultdict
from pathlib import Path

import numpy as np

from bench.common import held_out
from hiera_dspy.data import load_dataset
from hiera_dspy.metrics.classification import classification_metrics
from hiera_dspy.records import Pair
from hiera_dspy.untrusted.families import FAMILIES, attack, opposite_of_gold, phrasings

try:  # the defended code screens every item before a program reads it; the code before the defences does not
    from hiera_dspy.untrusted.screen import program_inputs
except ImportError:  # pragma: no cover - the "before" checkout
    program_inputs = Pair.inputs

OUT = Path("bench/results/manipulation")


def hostile_copies(pairs: list[Pair], labels: tuple[str, ...], families: list[str], splits: list[str],
                   per_pair: int | None, seed: int) -> list[tuple[str, str, Pair, Pair]]:
    """(family, split, clean pair, hostile copy): every phrasing of the split, or `per_pair` drawn ones a pair."""
    out = []
    for pair in pairs:
        target = opposite_of_gold(pair, labels)
        for family in families:
            for split in splits:
                count = len(phrasings(family, split))
                rng = random.Random(f"{seed}:{pair.id}:{family}:{split}")
                chosen = range(count) if per_pair is None else sorted(rng.sample(range(count), min(per_pair, count)))
                for i in chosen:
                    hostile = attack(pair, family, target, labels, split, seed, i)
                    out.append((family, split, pair, hostile._replace(id=f"{hostile.id}:{split}")))
    return out


def restored(pairs: list[Pair], labels: tuple[str, ...], families: list[str], splits: list[str], seed: int) -> dict:
    """Per family and split, how many hostile copies the screen restores: their screened title and text equal the
    clean copy's. A judge reads only the screened item (`program_inputs`), so a restored copy is judged on the very
    input of its clean copy and, deterministic and cached, cannot flip; only the others need a judge to measure."""
    cells: dict = defaultdict(lambda: {"n": 0, "restored": 0})
    for family, split, clean, copy in hostile_copies(pairs, labels, families, splits, None, seed):
        a, b = program_inputs(clean), program_inputs(copy)
        cell = cells[f"{family}/{split}"]
        cell["n"] += 1
        cell["restored"] += (a["item_title"], a["item_text"]) == (b["item_title"], b["item_text"])
    return dict(cells)


def augmented(train: list[Pair], labels: tuple[str, ...], seed: int) -> list[Pair]:
    """The train pairs and one hostile copy per train-phrasing family each (gold label kept: an item does not become
    relevant by saying so)."""
    families = [f for f in FAMILIES if f != "control"]
    return train + [h for _, _, _, h in hostile_copies(train, labels, families, ["train"], 1, seed)]


class CachedEmbedder:
    """The scorer's sentence embedder with its vectors kept in one file across runs (a bench convenience: the
    before and after runs embed the same texts)."""

    def __init__(self, inner, path: Path):
        self.inner, self.path, self.model_id = inner, path, inner.model_id
        self.vectors: dict[str, np.ndarray] = pickle.loads(path.read_bytes()) if path.is_file() else {}

    def encode(self, texts: list[str]) -> np.ndarray:
        """Vectors of `texts`, computing only the ones not in the file."""
        keys = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        missing = sorted({k: t for k, t in zip(keys, texts) if k not in self.vectors}.items())
        if missing:
            for (k, _), v in zip(missing, self.inner.encode([t for _, t in missing])):
                self.vectors[k] = v
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_bytes(pickle.dumps(self.vectors))
        return np.stack([self.vectors[k] for k in keys]) if keys else np.zeros((0, 384))


def build_judge(method: str, dataset, lm: str, train: list[Pair], embed_cache: Path | None = None):
    """The method fitted on `train` (learned judges), with the local LLM for every role that calls one."""
    from hiera_dspy.knowledge import make_knowledge
    from hiera_dspy.lm.roles import LMSpec, build_lms
    from hiera_dspy.methods import BuildContext, build
    from hiera_dspy.signals.features import resolve_embedder

    lms = build_lms({role: LMSpec(lm) for role in ("judge", "relation", "query", "item")})
    program = build(method, BuildContext(dataset.scheme, lms, make_knowledge("auto", dataset), train=train))
    state = getattr(program, "scorer_state", None)
    if embed_cache and state is not None and state.embedder == "auto":
        state.embedder = CachedEmbedder(resolve_embedder("auto"), embed_cache)
    if hasattr(program, "prepare"):
        program.prepare(train, [])
    return program


def judge_batch(program, pairs: list[Pair]) -> dict[str, str]:
    """embed-lr in batches: the runner's screened inputs, the scorer's most probable label."""
    screened = [Pair(p.id, **program_inputs(p), label=p.label, query_id=p.query_id, item_id=p.item_id) for p in pairs]
    labels = program.scorer_state.scorer.predict_many(screened)
    return {p.id: label for p, label in zip(pairs, labels)}


def judge_store(program, pairs: list[Pair], run_id: str, chunk: int | None) -> dict[str, str | None]:
    """Judged through the resumable run store (at most `chunk` new judgments this call); {id: label or None}."""
    from hiera_dspy.cli.options import runs_dir
    from hiera_dspy.runs.runner import run_pairs
    from hiera_dspy.store.run_store import RunStore

    store = RunStore(runs_dir() / "store.sqlite")
    store.start_run(run_id, {"bench": "manipulation", "run": run_id})
    done = store.finished_ids(run_id, include_errors=True)
    todo = [p for p in pairs if p.id not in done][:chunk] if chunk else pairs
    run_pairs(program, todo, store, run_id, progress=False)
    return {r.id: (None if r.error else r.label) for r in store.rows(run_id)}


def measure(args) -> dict:
    """Judge the clean and hostile copies with one method; the flips per family and split, the clean metrics."""
    dataset = load_dataset("msrd")
    labels = dataset.scheme.labels
    pairs = held_out(dataset, args.pairs, args.seed)
    train = list(dataset.splits["train"])
    if args.augment:
        train = augmented(train, labels, args.seed)
    families = args.families.split(",") if args.families else list(FAMILIES)
    hostile = hostile_copies(pairs, labels, families, args.splits.split(","), args.per_pair, args.seed)
    if args.unrestored_only:  # the copies a judge can flip on: the screen did not give back the clean item
        hostile = [h for h in hostile if program_inputs(h[2]) != program_inputs(h[3])]
    program = build_judge(args.method, dataset, args.lm, train, args.embed_cache)
    everything = pairs + [h for _, _, _, h in hostile]
    if args.method == "embed-lr":
        got = judge_batch(program, everything)
    else:  # pair-major: a pair's hostile copies right after its clean one (llama.cpp reuses the shared prefix)
        order = [p for pair in pairs for p in [pair] + [h for _, _, c, h in hostile if c.id == pair.id]]
        run_id = re.sub(r"[^A-Za-z0-9._+=@-]+", "_", f"manipulation-{args.method}-{args.lm}-{args.tag}-{args.seed}")
        got = judge_store(program, order, run_id, args.chunk)
    judged = [p for p in pairs if p.id in got]
    metrics = classification_metrics([p.label for p in judged], [got[p.id] for p in judged], list(labels))
    cells: dict = defaultdict(lambda: {"n": 0, "flips": 0, "errors": 0})
    for family, split, clean, copy in hostile:
        if copy.id not in got or clean.id not in got or got[clean.id] is None:
            continue
        cell = cells[f"{family}/{split}"]
        cell["n"] += 1
        cell["errors"] += got[copy.id] is None
        cell["flips"] += got[copy.id] != got[clean.id]
    return {"method": args.method, "tag": args.tag, "lm": args.lm, "augment": args.augment, "seed": args.seed,
            "unrestored_only": args.unrestored_only, "families": families, "splits": args.splits,
            "per_pair": args.per_pair,
            "pairs": len(judged), "of_pairs": len(pairs), "kappa": metrics["kappa"], "accuracy": metrics["accuracy"],
            "cells": dict(cells)}


def report(folder: Path, split: str = "test") -> str:
    """The markdown table of every METHOD-TAG.json in `folder`: flip rate per family (`split` phrasings), and the
    share of hostile copies the screen restores (`restored.json`, when there)."""
    order = {"embed-lr": 0, "probe-stacked": 1, "zero-shot": 2, "hiera": 3}
    rest = json.loads((folder / "restored.json").read_text())["cells"] if (folder / "restored.json").is_file() else {}
    runs = sorted((json.loads(p.read_text()) for p in folder.glob("*.json") if p.name != "restored.json"),
                  key=lambda r: (order.get(r["method"], 9), r["method"], r["tag"] != "before", r.get("augment")))
    runs = [r for r in runs if any(k.endswith(f"/{split}") for k in r["cells"])]
    columns = ["restored by the screen"] + [f"{r['method']} {r['tag']}" + (" +aug" if r.get("augment") else "")
                                            + (" unrestored only" if r.get("unrestored_only") else "") for r in runs]
    lines = ["| family | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for family in FAMILIES:
        c = rest.get(f"{family}/{split}")
        cells = [f"{c['restored'] / c['n']:.2f} ({c['n']})" if c and c["n"] else "-"]
        for r in runs:
            c = r["cells"].get(f"{family}/{split}")
            cells.append(f"{c['flips'] / c['n']:.2f} ({c['n']})" if c and c["n"] else "-")
        lines.append(f"| {family} | " + " | ".join(cells) + " |")
    lines.append("| clean kappa | - | " + " | ".join(f"{r['kappa']:.3f}" for r in runs) + " |")
    lines.append("| clean accuracy | - | " + " | ".join(f"{r['accuracy']:.3f}" for r in runs) + " |")
    lines.append("| pairs | - | " + " | ".join(f"{r['pairs']}/{r['of_pairs']}" for r in runs) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--method", default="embed-lr")
    p.add_argument("--lm", default="local")
    p.add_argument("--pairs", type=int, default=100, help="held-out pool pairs (half relevant)")
    p.add_argument("--per-pair", type=int, default=None, help="phrasings drawn per family and pair (default: all)")
    p.add_argument("--splits", default="test", help="phrasing splits to attack with: test, train or train,test")
    p.add_argument("--families", default="", help="comma-separated families (default: all)")
    p.add_argument("--augment", action="store_true", help="fit learned judges on train + hostile train copies")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tag", default="after", help="before | after: which code state this checkout is")
    p.add_argument("--chunk", type=int, default=None, help="LLM methods: stop after this many new judgments")
    p.add_argument("--report", action="store_true", help="write OUT.md (the table) from every run in OUT")
    p.add_argument("--unrestored-only", action="store_true",
                   help="judge only the hostile copies the screen does not restore (a slow judge's sample)")
    p.add_argument("--restored", action="store_true", help="share of hostile copies the screen restores (no judge)")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--embed-cache", type=Path, default=None, help="a file to keep MiniLM vectors in across runs")
    args = p.parse_args(argv)
    if args.restored:
        dataset = load_dataset("msrd")
        families = args.families.split(",") if args.families else list(FAMILIES)
        cells = restored(held_out(dataset, args.pairs, args.seed), dataset.scheme.labels, families,
                         args.splits.split(","), args.seed)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "restored.json").write_text(json.dumps({"pairs": args.pairs, "seed": args.seed, "cells": cells},
                                                           indent=1, sort_keys=True))
        for key, c in sorted(cells.items()):
            print(f"{key:28s} {c['restored']:4d}/{c['n']:<4d} {c['restored'] / max(1, c['n']):.2f}")
        return
    if args.report:
        text = "\n".join(f"## {split} phrasings (flip rate, hostile copies judged)\n\n{report(args.out, split)}\n"
                         for split in ("review", "test", "train"))
        Path(f"{args.out}.md").write_text(f"# Manipulation benchmark (bench/manipulation.py)\n\n{text}")
        print(text)
        return
    result = measure(args)
    args.out.mkdir(parents=True, exist_ok=True)
    name = f"{args.method}-{args.tag}{'-aug' if args.augment else ''}.json"
    (args.out / name).write_text(json.dumps(result, indent=1, sort_keys=True))
    print(json.dumps({k: v for k, v in result.items() if k != "cells"}))
    for key, c in sorted(result["cells"].items()):
        print(f"{key:28s} {c['flips']:4d}/{c['n']:<4d} {c['flips'] / max(1, c['n']):.2f}  errors {c['errors']}")


if __name__ == "__main__":
    main()
