"""Whether a judgment depends on what is judged beside it: the int8 ONNX models scored a batch at a time against one
text a run (what `OnnxRunner(one_text_a_run=True)` does for every int8 model), on a dataset's pairs.

    python -m bench.batch_invariance --dataset msrd --judge artifacts/msrd/ce-blend.json --limit 300
    python -m bench.batch_invariance --dataset trec:DL20 --late --limit 300

Subjects: `--judge ART`, the cross-encoder of a compiled ce-blend artifact, on its shipped ONNX path (the logits and
the cross-encoder's own ordinal labels), and the judge's own labels each way with their kappa against gold; `--late`, the late-interaction token encoder's int8 pass (the three
LATE_COLUMNS of each pair). For each: the largest and the median change between the batched outputs (batches of
`--batch`, as the product batched before) and one text a run, the labels that change (cross-encoder), and the wall
time a text of each way on this machine's cores. DL20 is a TREC folder (topics.tsv, qrels.txt, corpus.jsonl.gz): not
shipped.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def timed(fn):
    """(fn(), seconds)."""
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def cross_encoder(judge_path: str, pairs: list, batch: int) -> list[dict]:
    """The artifact's cross-encoder on its shipped path, batched against one text a run; then the whole judge's
    labels (ce-blend: its `prefetch` scores the pairs in one batch, as `hiera-dspy run` does) each way, with Cohen's
    kappa against the pairs' gold labels."""
    from sklearn.metrics import cohen_kappa_score

    from hiera_dspy.artifacts.judge_file import load_judge
    from hiera_dspy.signals.onnx_encoder import OnnxRunner, ordinal_labels

    judge = load_judge(judge_path)
    ce = judge.encoder
    if ce.runner is None:
        return [{"subject": "cross-encoder", "note": "no ONNX runner (onnxruntime missing or weights without export)"}]
    triples = [(p.query, p.item_title, p.item_text) for p in pairs]
    runners = {"alone": OnnxRunner(ce.runner.path, one_text_a_run=True), "batched": OnnxRunner(ce.runner.path)}
    logits, seconds, labels = {}, {}, {}
    for way, runner in runners.items():
        ce.runner = runner
        logits[way], seconds[way] = timed(lambda: ce.logits(triples, batch))
        judge.prefetch(pairs)
        labels[way] = [judge(query=q, item_title=t, item_text=x).label for q, t, x in triples]
    diff = np.abs(logits["alone"] - logits["batched"])
    gold = [p.label for p in pairs]
    return [{"subject": f"cross-encoder ({runners['alone'].path.name})", "max": float(diff.max()),
             "median": float(np.median(diff)),
             "labels_changed": int((ordinal_labels(logits["alone"]) != ordinal_labels(logits["batched"])).sum()),
             "ms_alone": 1000 * seconds["alone"] / len(triples), "ms_batched": 1000 * seconds["batched"] / len(triples)},
            {"subject": f"the judge ({judge.method}): kappa against gold, alone {cohen_kappa_score(gold, labels['alone']):.3f}, "
                        f"batched {cohen_kappa_score(gold, labels['batched']):.3f}",
             "labels_changed": sum(a != b for a, b in zip(labels["alone"], labels["batched"]))}]


def late(triples: list[tuple[str, str, str]], batch: int) -> dict:
    """The late-interaction features from the int8 pass: batched against one text a run."""
    from hiera_dspy.signals.late_interaction import LateInteraction, TokenEncoder
    from hiera_dspy.signals.onnx_encoder import OnnxRunner

    encoder = TokenEncoder(batch_size=batch)
    if encoder.precision != "int8":
        return {"subject": "late interaction", "note": "int8 refused on this machine: fp32 is exact in batches"}
    alone, alone_s = timed(lambda: LateInteraction(encoder).features(triples))
    encoder.runner = OnnxRunner(encoder.runner.path)
    batched, batched_s = timed(lambda: LateInteraction(encoder).features(triples))
    diff = np.abs(alone - batched)
    return {"subject": "late interaction (int8)", "max": float(diff.max()), "median": float(np.median(diff)),
            "labels_changed": None, "ms_alone": 1000 * alone_s / len(triples),
            "ms_batched": 1000 * batched_s / len(triples)}


def markdown(rows: list[dict], n: int, batch: int) -> str:
    lines = [f"{n} pairs; batched: runs of up to {batch} texts; alone: one text a run.", "",
             "| subject | largest change | median change | labels changed | ms a text alone | ms a text batched |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        if "note" in r:
            lines.append(f"| {r['subject']} | {r['note']} | | | | |")
            continue
        if "max" not in r:  # a judge's labels only
            lines.append(f"| {r['subject']} | | | {r['labels_changed']} of {n} | | |")
            continue
        changed = "-" if r["labels_changed"] is None else f"{r['labels_changed']} of {n}"
        lines.append(f"| {r['subject']} | {r['max']:.4f} | {r['median']:.5f} | {changed} | {r['ms_alone']:.2f} | "
                     f"{r['ms_batched']:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True, help="a --dataset spec: msrd, trec:FOLDER, jsonl:PATH, ...")
    p.add_argument("--split", default=None, help="the dataset's split (default: test, else its first)")
    p.add_argument("--judge", default=None, help="a compiled ce-blend artifact: its cross-encoder")
    p.add_argument("--late", action="store_true", help="the late-interaction encoder's int8 pass")
    p.add_argument("--limit", type=int, default=300)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    from hiera_dspy.data import load_dataset

    ds = load_dataset(args.dataset)
    split = args.split or ("test" if "test" in ds.splits else sorted(ds.splits)[0])
    pairs = list(ds.splits[split])
    chosen = np.random.default_rng(args.seed).permutation(len(pairs))[:args.limit]
    chosen_pairs = [pairs[i] for i in sorted(chosen)]
    triples = [(p.query, p.item_title, p.item_text) for p in chosen_pairs]
    rows = (cross_encoder(args.judge, chosen_pairs, args.batch) if args.judge else []) + (
        [late(triples, args.batch)] if args.late else [])
    if not rows:
        p.error("name a subject: --judge ART and/or --late")
    print(markdown(rows, len(triples), args.batch))


if __name__ == "__main__":
    main()
