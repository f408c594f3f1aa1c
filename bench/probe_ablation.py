"""Which part of the probe's prompt costs quality, and what its length costs in time: variants of
`hiera_dspy.methods.probe_prompt` on one set of MSRD pairs, the probe cross-validated over their queries.

    flock /work/model.lock nice -n -5 python -m bench.probe_ablation embed --variant question-256 [--minutes 14]
    python -m bench.probe_ablation table            # no model: every variant whose vectors are all cached

`embed` computes the hidden states of one variant's prompts for the pairs (`--split`: the 300 bundled train pairs) into
the probe's disk cache (`~/.cache/hiera-dspy/probe`, keyed by prompt: a rerun resumes, a variant shared with the
method costs nothing later), timing each uncached batch (wall seconds and the process's CPU seconds; on 2 cores a
dedicated machine's wall time is about CPU / 2) and counting its prompt tokens; it stops after `--minutes`, so a hold
of the model lock stays short. `table` scores every variant on the same pairs: the probe alone (llm-probe) and the probe
stacked with embed-lr (fitted on the 300 bundled train pairs; for train pairs out-of-fold), each out-of-fold over 5 query-grouped folds of the
pairs (the stacker nested: its probe inputs are out-of-fold within the training folds), kappa with its bootstrap 95%
CI, McNemar against embed-lr and against the first variant, tokens and seconds a pair. Writes
bench/results/probe_ablation.md and .json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from bench.common import heldout_pairs, probe_pool_pairs
from hiera_dspy import settings
from hiera_dspy.data import load_dataset
from hiera_dspy.lm import model_store
from hiera_dspy.methods import probe_states
from hiera_dspy.methods.probe import Probe, grouped_folds
from hiera_dspy.methods.probe_prompt import PromptFormat
from hiera_dspy.metrics.classification import bootstrap_ci, classification_metrics
from hiera_dspy.metrics.format import number, with_ci
from hiera_dspy.metrics.significance import mcnemar
from hiera_dspy.signals import RelevanceScorer
from hiera_dspy.signals.stacking import Stacker

OUT = Path("bench/results")
# name -> (the relevance question after the item block, item text characters); "head": the text's first characters
# (the overview first, as the first probe had it) instead of `probe_prompt.compact` (longest lines cut first)
HOW_RELEVANT = "How relevant is this item to the search query? Answer {labels}."  # commit 2dbe15f's last line
VARIANTS = {
    "system-256": (False, 256),   # commit 2220f9f's prompt: labels named only in the system line; the restatement last
    "question-256": (HOW_RELEVANT, 256),  # + the question with the labels right before the answer (commit 2dbe15f, 2026-12-01)
    "question-600": (HOW_RELEVANT, 600),
    "question-128": (HOW_RELEVANT, 128),
    "question-400": (HOW_RELEVANT, 400),
    "question-head-256": (HOW_RELEVANT, 256),
    "question-head-600": (HOW_RELEVANT, 600),
    "question-160": (HOW_RELEVANT, 160),  # commit 6fa0f98 (2026-12-01): fewer tokens a pair (the <= 1 s goal)
    "answer-160": ("Answer {labels}.", 160),  # commit 6fa0f98 (2026-12-01): the labels last in 7 tokens instead of 17 (now the default)
}


def prompts_for(fmt: PromptFormat, pairs, variant: str) -> list[str]:
    question, chars = VARIANTS[variant]
    if "head" in variant:
        return [fmt.render(p.query, p.item_title, (p.item_text or "")[:chars].rstrip(), chars, question=question)
                for p in pairs]
    return [fmt.render(p.query, p.item_title, p.item_text, chars, question=question) for p in pairs]


def model_format(labels) -> PromptFormat:
    return PromptFormat.for_model(labels, str(model_store.ensure_model()))


def pairs_of(dataset, split: str, limit: int | None):
    """The pairs of a split of the bundled MSRD data, "heldout": bench/probe_heldout.py's held-out pairs, or
    "probe-pool:N": its --probe-pool N pairs."""
    if split == "heldout":
        pairs = heldout_pairs(dataset)
    elif split.startswith("probe-pool"):  # "probe-pool:500": bench/probe_heldout.py --probe-pool 500's pairs
        pairs = probe_pool_pairs(dataset, int(split.partition(":")[2] or 500))
    else:
        pairs = list(dataset.splits[split])
    return pairs[:limit] if limit else pairs


def timing_file(out: Path) -> Path:
    return out / "probe_ablation_timing.jsonl"


def embed(args) -> None:
    """Hidden states of one variant's uncached prompts into the disk cache, timed, for at most `--minutes`."""
    dataset = load_dataset("msrd")
    pairs = pairs_of(dataset, args.split, args.limit)
    path = str(model_store.ensure_model())
    fmt = PromptFormat.for_model(dataset.scheme.labels, path)
    prompts = prompts_for(fmt, pairs, args.variant)
    folder = settings.cache_dir() / "probe"
    todo = [p for p in prompts if not (folder / f"{probe_states.prompt_key(p)}.npy").is_file()]
    print(f"{args.variant}: {len(prompts) - len(todo)}/{len(prompts)} cached", file=sys.stderr)
    if not todo:
        return
    embed_many = probe_states.cached(probe_states.llama_embedder(path), folder)
    model = None
    deadline = time.monotonic() + 60 * args.minutes
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for start in range(0, len(todo), args.chunk):
        if time.monotonic() > deadline:
            print(f"{args.variant}: stopped after {args.minutes} min; run again to resume", file=sys.stderr)
            break
        chunk = todo[start:start + args.chunk]
        if model is None:  # load outside the timing
            embed_many(chunk[:1])
            model, chunk = probe_states._MODELS[path], chunk[1:]
            if not chunk:
                continue
        tokens = [len(model.llama.tokenize(p.encode(), special=True)) for p in chunk] \
            if hasattr(model, "llama") else []
        fed = getattr(getattr(model, "reuse", None), "fed", None)
        wall, cpu = time.perf_counter(), time.process_time()
        embed_many(chunk)
        record = {"variant": args.variant, "split": args.split, "prompts": len(chunk), "wall_s": time.perf_counter() - wall,
                  "cpu_s": time.process_time() - cpu, "tokens": sum(tokens), "batch": probe_states.batch_size(),
                  "tokens_read": None if fed is None else model.reuse.fed - fed,
                  "load": list(map(float, __import__("os").getloadavg()))}
        with timing_file(out).open("a") as fh:
            fh.write(json.dumps(record) + "\n")
        print(f"{args.variant}: {start + len(chunk) + 1}/{len(todo)}  {record['wall_s'] / len(chunk):.2f} s/pair wall, "
              f"{record['cpu_s'] / len(chunk):.2f} CPU-s/pair", file=sys.stderr)


def cached_vectors(prompts: list[str]) -> np.ndarray | None:
    folder = settings.cache_dir() / "probe"
    files = [folder / f"{probe_states.prompt_key(p)}.npy" for p in prompts]
    if not all(f.is_file() for f in files):
        return None
    return np.stack([np.load(f) for f in files])


def probe_oof(x: np.ndarray, pairs, labels, C: float, folds) -> list[dict]:
    """Out-of-fold probe distributions over `folds`."""
    out: list = [None] * len(pairs)
    for tr, te in folds:
        probe = Probe(labels, C).fit(x[tr], [pairs[i].label for i in tr])
        for i in te:
            out[i] = probe.predict_proba(x[i])
    return out


def stacked_oof(x: np.ndarray, pairs, labels, scorer_dists, C: float, folds) -> list[dict]:
    """Out-of-fold stacked distributions: per outer fold, the stacker is fitted on the training folds' scorer
    distributions and their probe distributions out-of-fold within the training folds."""
    out: list = [None] * len(pairs)
    for tr, te in folds:
        inner_pairs = [pairs[i] for i in tr]
        inner = probe_oof(x[tr], inner_pairs, labels, C, grouped_folds(inner_pairs, 5))
        stacker = Stacker(labels).fit([scorer_dists[i] for i in tr], inner, [p.label for p in inner_pairs])
        probe = Probe(labels, C).fit(x[tr], [p.label for p in inner_pairs])
        for i in te:
            out[i] = stacker.predict_proba(scorer_dists[i], probe.predict_proba(x[i]))
    return out


def scorer_distributions(dataset, pairs, folds, embedder: str) -> list[dict]:
    """embed-lr's distribution of every pair: fitted on the 300 bundled train pairs, or, for pairs of the train split
    itself, out-of-fold (each fold's scorer fitted on the train pairs of the other folds' queries)."""
    train = list(dataset.splits["train"])
    ids = {p.id for p in train}
    if not any(p.id in ids for p in pairs):
        return RelevanceScorer(dataset.scheme, embedder=embedder).fit(train).predict_proba_many(pairs)
    out: list = [None] * len(pairs)
    for tr, te in folds:
        held = {pairs[i].query_id for i in te}
        fold = RelevanceScorer(dataset.scheme, embedder=embedder).fit([p for p in train if p.query_id not in held])
        for i, d in zip(te, fold.predict_proba_many([pairs[i] for i in te])):
            out[i] = d
    return out


def argmax(dists: list[dict]) -> list[str]:
    return [max(d, key=d.get) for d in dists]


def timing_of(out: Path, variant: str, split: str | None = None) -> dict:
    """Seconds and tokens a pair of a variant's timed batches (of one split, when given)."""
    file = timing_file(out)
    records = [json.loads(line) for line in file.read_text().splitlines()] if file.is_file() else []
    records = [r for r in records if r["variant"] == variant and split in (None, r.get("split", "train"))]
    n = sum(r["prompts"] for r in records)
    if not n:
        return {}
    return {"timed_pairs": n, "wall_s_per_pair": sum(r["wall_s"] for r in records) / n,
            "cpu_s_per_pair": sum(r["cpu_s"] for r in records) / n,
            "tokens_per_pair": sum(r["tokens"] for r in records) / n if all(r["tokens"] for r in records) else None,
            "tokens_read_per_pair": sum(r["tokens_read"] for r in records) / n
            if all(r.get("tokens_read") for r in records) else None,
            "load": statistics.median(r["load"][0] for r in records)}


def fitted_on_train(dataset, fmt, variant: str, x: np.ndarray, scorer_dists, args):
    """llm-probe's and probe-stacked's labels of the scored pairs (vectors `x`, embed-lr's distributions
    `scorer_dists`), fitted as `ProbeStackedProgram.prepare` fits them on the 300 train pairs: the stacker on
    out-of-fold train distributions, the probe on all train pairs. (None, None) when a train vector is missing."""
    train = list(dataset.splits["train"])
    x_train = cached_vectors(prompts_for(fmt, train, variant))
    if x_train is None:
        return None, None
    labels, folds = list(dataset.scheme.labels), grouped_folds(train, 5)
    gold = [p.label for p in train]
    scorer_oof = scorer_distributions(dataset, train, folds, args.embedder)
    stacker = Stacker(labels).fit(scorer_oof, probe_oof(x_train, train, labels, args.probe_C, folds), gold)
    probe = Probe(labels, args.probe_C).fit(x_train, gold)
    dists = [probe.predict_proba(v) for v in x]
    return argmax(dists), argmax([stacker.predict_proba(s, d) for s, d in zip(scorer_dists, dists)])


def table(args) -> dict:
    """Every variant whose vectors are all cached, scored on the same pairs (see the module doc)."""
    dataset = load_dataset("msrd")
    pairs = pairs_of(dataset, args.split, args.limit)
    labels = list(dataset.scheme.labels)
    gold = [p.label for p in pairs]
    folds = grouped_folds(pairs, 5)
    scorer_dists = scorer_distributions(dataset, pairs, folds, args.embedder)
    reference = argmax(scorer_dists)
    fmt = model_format(dataset.scheme.labels)
    rows, first = [], None

    def add(name: str, variant: str, pred: list[str], extra: dict) -> None:
        m = classification_metrics(gold, pred, labels)
        vs_ref, vs_first = mcnemar(gold, reference, pred), mcnemar(gold, first[name.split()[0]], pred) if first else None
        rows.append({"name": name, "variant": variant, "n": m["n"], "kappa": m["kappa"],
                     "kappa_ci": list(bootstrap_ci(gold, pred, labels, "kappa")), "accuracy": m["accuracy"],
                     "vs_embed_lr": [vs_ref["b"], vs_ref["c"], vs_ref["p_value"]],
                     "vs_first": [vs_first["b"], vs_first["c"], vs_first["p_value"]] if vs_first else None, **extra})

    add("embed-lr", "-", reference, {})
    for variant in VARIANTS:
        x = cached_vectors(prompts_for(fmt, pairs, variant))
        if x is None:
            print(f"{variant}: not every vector cached; skipped", file=sys.stderr)
            continue
        extra = {"question": VARIANTS[variant][0], "text_chars": VARIANTS[variant][1], **timing_of(Path(args.out), variant,
                                                                                                  args.split)}
        if args.fit_on_train:  # as the method: fitted on the 300 train pairs, judging `pairs`
            probe, stacked = fitted_on_train(dataset, fmt, variant, x, scorer_dists, args)
            if probe is None:
                print(f"{variant}: not every train vector cached; skipped", file=sys.stderr)
                continue
        else:
            probe = argmax(probe_oof(x, pairs, labels, args.probe_C, folds))
            stacked = argmax(stacked_oof(x, pairs, labels, scorer_dists, args.probe_C, folds))
        if first is None:
            first = {"llm-probe": probe, "probe-stacked": stacked}
        add("llm-probe", variant, probe, extra)
        add("probe-stacked", variant, stacked, extra)
    result = {"split": args.split, "n": len(pairs), "embedder": args.embedder, "rows": rows,
              "fit_on_train": bool(args.fit_on_train)}
    out = Path(args.out)
    (out / "probe_ablation.json").write_text(json.dumps(result, indent=1) + "\n")
    text = markdown(result)
    (out / "probe_ablation.md").write_text(text)
    print(text)
    return result


def last_line(question) -> str:
    """The table's name for a variant's last line."""
    if question is True or question == HOW_RELEVANT:
        return "How relevant ...? Answer L."
    if question is False:
        return "none (the restatement last)"
    return "Answer L." if question == "Answer {labels}." else ("-" if question in (None, "-") else str(question))


def markdown(result: dict) -> str:
    how = ("probe and stack fitted on the 300 bundled train pairs" if result.get("fit_on_train")
           else "5 query-grouped folds")
    lines = [f"### Probe prompt variants: MSRD {result['split']} ({result['n']} pairs), {how}; "
             "embed-lr fitted on the 300 bundled train pairs (train pairs: out-of-fold)", "",
             "| judge | variant | last line (L: the labels) | text chars | n | kappa [95% CI] | accuracy | McNemar vs embed-lr "
             "(b, c, p) | McNemar vs first variant (b, c, p) | tokens/pair | s/pair wall | CPU-s/pair | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        mc = "-" if r["name"] == "embed-lr" else ", ".join(number(v) if isinstance(v, float) else str(v)
                                                          for v in r["vs_embed_lr"])
        mf = "-" if not r.get("vs_first") else ", ".join(number(v) if isinstance(v, float) else str(v)
                                                         for v in r["vs_first"])
        tok, read = r.get("tokens_per_pair"), r.get("tokens_read_per_pair")
        tok = tok if read is None or tok is None else f"{tok:.0f} ({read:.0f} read)"
        lines.append(f"| {r['name']} | {r['variant']} | {last_line(r.get('question'))} | {r.get('text_chars', '-')} | "
                     f"{r['n']} | {with_ci(r['kappa'], r['kappa_ci'])} | {number(r['accuracy'])} | {mc} | {mf} | "
                     f"{'-' if tok is None else (tok if isinstance(tok, str) else f'{tok:.0f}')} | "
                     f"{number(r['wall_s_per_pair'], '.2f') if 'wall_s_per_pair' in r else '-'} | "
                     f"{number(r['cpu_s_per_pair'], '.2f') if 'cpu_s_per_pair' in r else '-'} | "
                     f"{number(r['load'], '.1f') if 'load' in r else '-'} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    for name in ("embed", "table"):
        p = sub.add_parser(name)
        p.add_argument("--split", default="train")
        p.add_argument("--limit", type=int)
        p.add_argument("--out", default=str(OUT))
    sub.choices["embed"].add_argument("--variant", choices=sorted(VARIANTS), required=True)
    sub.choices["embed"].add_argument("--minutes", type=float, default=14.0)
    sub.choices["embed"].add_argument("--chunk", type=int, default=16)
    sub.choices["table"].add_argument("--embedder", default="auto")
    sub.choices["table"].add_argument("--probe-C", type=float, default=0.01)
    sub.choices["table"].add_argument("--fit-on-train", action="store_true",
                                      help="fit on the train split and score --split (e.g. dev) instead of folds")
    args = ap.parse_args(argv)
    return embed(args) if args.command == "embed" else table(args)


if __name__ == "__main__":
    main()
