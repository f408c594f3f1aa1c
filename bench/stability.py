"""Stability benchmark: how many labels a judge flips when the catalog re-words an item, beside the attack
families, on held-out pairs of MSRD, Home Depot and TREC DL 2020 passages.

    python -m bench.stability measure --dataset msrd --judge artifacts/msrd/ce-blend.json --tag after
    python -m bench.stability measure --dataset homedepot --data HOMEDEPOT --fit quick --tag after
    python -m bench.stability measure --dataset trec --data DL20 --fit quick --tag after
    python -m bench.stability report                      # OUT.md: every run's tables on one page

HOMEDEPOT is a folder of the Home Depot relevance data and DL20 a TREC DL 2020 passage folder (topics.tsv,
qrels.txt, corpus.jsonl.gz): neither is shipped.

Edits: the benign re-wordings of `hiera_dspy.untrusted.rewordings` (each applied where it makes sense: a passage has
no title or fields) and, on the same pairs, one `test` phrasing a family of each attack family of
`hiera_dspy.untrusted.families` (`bench.manipulation.hostile_copies`, pushing toward the label opposite the gold one).
A flip is an edited copy labelled otherwise than the same judge's clean copy; accuracy and kappa are the edited
copies' against gold, beside the clean copies' accuracy on the same pairs (`clean acc`).

Judges: ce-blend (`--judge ART`, a compiled artifact, with `--refit-scorer` its scorer refitted by this code on the
pairs it learned from, or `--fit quick`: fitted here on the dataset's train part with the quickstart budget's config:
lexical trees scorer, `--ce-pairs` cross-encoder pairs), the whole-pool trees scorer
inside it (its argmax, no cross-encoder), and embed-lr fitted here on 300 train pairs (MSRD: the bundled train.jsonl).
For ce-blend the ablation says which part moves: the blend's label with only the item prior's columns edited (the rest
of the scorer and the cross-encoder read the clean copy), only the scorer's other features edited, only the
cross-encoder's input edited.

Held-out pairs (no judge fitted on their queries): MSRD, one relevant and one irrelevant pool pair of each query of the
bundled dev split (`--split pool`, the documented compile's train split, leaves those queries out); Home Depot and
TREC, `--heldout-share` of the queries (seeded), the same number of pairs of each label where they have them; the
judges fitted here learn from the other queries. Reads `--data` (Home Depot's judgments-pool.jsonl.gz, TREC's
topics.tsv/qrels.txt/corpus.jsonl.gz); MSRD is the bundled data. Writes OUT/DATASET-TAG.json (`--out`).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from bench.common import MSRD
from bench.manipulation import hostile_copies
from hiera_dspy.data import load_dataset
from hiera_dspy.data.msrd_pool import pool_item_text
from hiera_dspy.data.msrd_sample import CATALOG_FIELDS
from hiera_dspy.jobs.optimizers import QUICKSTART
from hiera_dspy.labels import get_scheme
from hiera_dspy.methods.cross import blend_labels, dev_split
from hiera_dspy.metrics.classification import classification_metrics
from hiera_dspy.records import Pair
from hiera_dspy.signals.item_prior import PRIOR_FEATURES
from hiera_dspy.untrusted.families import FAMILIES
from hiera_dspy.untrusted.rewordings import REWORDINGS, reword
from hiera_dspy.untrusted.screen import program_inputs

OUT = Path("bench/results/stability")


# ------------------------------------------------------------------------------------------------- data


def msrd_data(args) -> tuple:
    """(scheme, held-out pairs, train pairs for a quick fit, 300 embed-lr pairs) of MSRD."""
    dataset = load_dataset("msrd")
    dev_queries = {p.query_id for p in dataset.splits["dev"]}
    with gzip.open(MSRD / "movies-corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        catalog = {str(r["id"]): r for r in map(json.loads, fh)}
    by_query: dict[str, dict[str, list[Pair]]] = defaultdict(lambda: defaultdict(list))
    with gzip.open(MSRD / "judgments-pool.tsv.gz", "rt", encoding="utf-8") as fh:
        next(fh)
        for qid, query, doc, grade in (line.rstrip("\n").split("\t") for line in fh):
            row = catalog.get(doc)
            if qid in dev_queries and row is not None:
                label = dataset.scheme.from_raw(int(grade))
                by_query[qid][label].append(Pair(f"msrd:{qid}:{doc}", query, str(row["title"]),
                                                 pool_item_text(row, CATALOG_FIELDS), label, qid, doc))
    held = balanced(by_query, dataset.scheme.labels, args.pairs, args.seed)
    train = list(dataset.split("pool")) if "ce-blend" in args.judges and (args.refit_scorer or not args.judge) else []
    return dataset.scheme, held, train, list(dataset.splits["train"])


def homedepot_data(args) -> tuple:
    """Home Depot's judgments (product titles only), split by query."""
    scheme = get_scheme("homedepot")
    pairs = []
    with gzip.open(args.data / "judgments-pool.jsonl.gz", "rt", encoding="utf-8") as fh:
        for r in map(json.loads, fh):
            label = scheme.labels[int(r["label"]) - 1]
            pairs.append(Pair(r["id"], r["query"], r["item_title"], "", label, r["query"], str(r["item_id"]),
                              float(r["relevance"]) - 1.0))
    return (scheme, *query_split(pairs, scheme.labels, args))


def trec_data(args) -> tuple:
    """TREC DL 2020 passages (no titles), split by query."""
    scheme = get_scheme("trec")
    topics = dict(line.rstrip("\n").split("\t", 1) for line in (args.data / "topics.tsv").open(encoding="utf-8"))
    with gzip.open(args.data / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        corpus = {str(r["id"]): r["text"] for r in map(json.loads, fh)}
    pairs = []
    for line in (args.data / "qrels.txt").open(encoding="utf-8"):
        qid, _, docid, grade = line.split()
        if qid in topics and docid in corpus:
            pairs.append(Pair(f"trec:{qid}:{docid}", topics[qid], "", corpus[docid], scheme.labels[int(grade)], qid,
                              docid))
    return (scheme, *query_split(pairs, scheme.labels, args))


DATASETS = {"msrd": msrd_data, "homedepot": homedepot_data, "trec": trec_data}


def balanced(by_query: dict, labels, n: int, seed: int, one_a_query: bool = True) -> list[Pair]:
    """Up to `n` pairs, the labels in equal numbers: one of each label per query in a seeded query order, or (not
    `one_a_query`: a few queries, many judged pairs each, as TREC's) a seeded sample of each label's pairs."""
    rng = random.Random(seed)
    queries = sorted(by_query)
    rng.shuffle(queries)
    share = n // len(labels)
    picked: dict[str, list[Pair]] = {label: [] for label in labels}
    for q in queries:
        for label in labels:
            if by_query[q].get(label) and len(picked[label]) < share and one_a_query:
                picked[label].append(rng.choice(by_query[q][label]))
    if not one_a_query:
        for label in labels:
            every = [p for q in queries for p in by_query[q].get(label, [])]
            picked[label] = rng.sample(every, min(share, len(every)))
    floor = min(len(v) for v in picked.values())
    pairs = [p for label in labels for p in picked[label][:floor]]
    rng.shuffle(pairs)
    return pairs


def query_split(pairs: list[Pair], labels, args) -> tuple[list[Pair], list[Pair], list[Pair]]:
    """(held-out pairs, train pairs of the other queries, 300 of those for embed-lr)."""
    rng = random.Random(args.seed)
    queries = sorted({p.query_id for p in pairs})
    held_queries = set(rng.sample(queries, max(1, int(len(queries) * args.heldout_share))))
    by_query: dict = defaultdict(lambda: defaultdict(list))
    for p in pairs:
        if p.query_id in held_queries:
            by_query[p.query_id][p.label].append(p)
    train = [p for p in pairs if p.query_id not in held_queries]
    held = balanced(by_query, labels, args.pairs, args.seed, one_a_query=len(held_queries) * len(labels) >= args.pairs)
    return held, train, rng.sample(train, min(300, len(train)))


# ------------------------------------------------------------------------------------------------- judges


def fit_judges(args, scheme, train: list[Pair], small: list[Pair]) -> dict:
    """{name: program}: ce-blend (loaded or fitted quick) and embed-lr on `small`, as `--judges` asks."""
    from hiera_dspy.artifacts.judge_file import load_judge
    from hiera_dspy.methods import BuildContext, build

    judges = {}
    if "ce-blend" in args.judges:
        if args.judge:
            judges["ce-blend"] = program = load_judge(args.judge)
            if args.refit_scorer:  # the scorer as this code fits it, on the pairs the artifact's scorer learned from
                fit, _ = dev_split([p for p in train if p.label in scheme.labels], scheme.labels,
                                   program.dev_queries, program.seed)
                program.scorer_state.fit(fit)
        else:
            if args.train_limit and len(train) > args.train_limit:
                train = random.Random(args.seed).sample(train, args.train_limit)
            config = {**QUICKSTART["ce-blend"]["config"], "ce_pairs": args.ce_pairs}
            program = build("ce-blend", BuildContext(scheme, train=train), **config)
            judges["ce-blend"] = program.prepare(train)
    if "embed-lr" in args.judges:
        program = build("embed-lr", BuildContext(scheme, train=small), embedder=args.embedder)
        judges["embed-lr"] = program.prepare(small)
    return judges


def screened(pairs: list[Pair]) -> list[Pair]:
    """The pairs as a program reads them: the screened item (`program_inputs`, as the runner passes it)."""
    return [p._replace(**program_inputs(p)) for p in pairs]


def parts(program, pairs: list[Pair]) -> dict:
    """A learned judge's parts on `pairs`: the scorer's feature rows and distributions, the cross-encoder's grade
    distributions (ce-blend)."""
    seen = screened(pairs)
    scorer = program.scorer_state.scorer
    x = scorer._matrix(seen)
    out = {"x": x, "scorer": scorer._proba_matrix(x)}
    if getattr(program, "encoder", None) is not None:
        out["ce"] = program.encoder.grade_probs([(p.query, p.item_title, p.item_text) for p in seen])
    return out


def labels_of(name: str, program, got: dict, labels) -> list[str]:
    """The judge `name`'s labels from its parts."""
    if name == "ce-blend":
        return blend_labels(got["scorer"], got["ce"], program.blend["weight"], program.thresholds, labels)
    return [labels[int(i)] for i in np.argmax(got["scorer"], axis=1)]


def ablation(program, clean: dict, edited: dict, labels) -> dict[str, list[str]]:
    """ce-blend's labels with one part reading the edited copy and the others the clean one."""
    names = program.scorer_state.scorer.feature_names
    prior = [i for i, n in enumerate(names) if n in PRIOR_FEATURES]
    scorer = program.scorer_state.scorer

    def mixed(x_prior, x_rest):
        x = np.array(x_rest, copy=True)
        x[:, prior] = x_prior[:, prior]
        return scorer._proba_matrix(x)

    w, cuts = program.blend["weight"], program.thresholds
    return {"item prior": blend_labels(mixed(edited["x"], clean["x"]), clean["ce"], w, cuts, labels),
            "other scorer features": blend_labels(mixed(clean["x"], edited["x"]), clean["ce"], w, cuts, labels),
            "cross-encoder": blend_labels(clean["scorer"], edited["ce"], w, cuts, labels)}


# ------------------------------------------------------------------------------------------------- measure


def edited_sets(held: list[Pair], labels, args) -> dict[str, list[tuple[Pair, Pair]]]:
    """{edit: [(clean pair, edited copy)]}: every benign re-wording where it applies, then each attack family."""
    sets = {}
    for name in REWORDINGS:
        sets[name] = [(p, e) for p in held if (e := reword(p, name)) is not None]
    families = args.families.split(",") if args.families else list(FAMILIES)
    hostile = hostile_copies(held, labels, families, ["test"], 1, args.seed)
    for family in families:
        sets[f"attack: {family}"] = [(c, h) for f, _, c, h in hostile if f == family]
    return {k: v for k, v in sets.items() if v}


def cell(gold: list[str], clean: list[str], edited: list[str], labels) -> dict:
    """Flips, the edited copies' accuracy and kappa, the clean copies' accuracy on the same pairs."""
    m = classification_metrics(gold, edited, list(labels))
    c = classification_metrics(gold, clean, list(labels))
    return {"n": len(gold), "flips": int(sum(a != b for a, b in zip(clean, edited))), "accuracy": m["accuracy"],
            "kappa": m["kappa"], "clean_accuracy": c["accuracy"], "clean_kappa": c["kappa"]}


def measure(args) -> dict:
    """Judge the held-out pairs and every edited copy with each judge; the cells per edit and judge."""
    start = time.perf_counter()
    scheme, held, train, small = DATASETS[args.dataset](args)
    labels = scheme.labels
    judges = fit_judges(args, scheme, train, small)
    sets = edited_sets(held, labels, args)
    result = {"dataset": args.dataset, "tag": args.tag, "seed": args.seed, "pairs": len(held), "judge": args.judge,
              "refit_scorer": args.refit_scorer,
              "fit": None if args.judge else "quick", "label_counts": {k: [p.label for p in held].count(k)
                                                                       for k in labels},
              "clean": {}, "cells": defaultdict(dict), "ablation": defaultdict(dict)}
    gold = [p.label for p in held]
    for name, program in judges.items():
        clean = parts(program, held)
        index = {p.id: i for i, p in enumerate(held)}
        views = {name: program} if name == "embed-lr" else {"ce-blend": program, "whole-pool scorer": program}
        clean_labels = {v: labels_of(v, program, clean, labels) for v in views}
        for v in views:
            m = classification_metrics(gold, clean_labels[v], list(labels))
            result["clean"][v] = {"accuracy": m["accuracy"], "kappa": m["kappa"], "n": len(held)}
        for edit, couples in sets.items():
            rows = [index[c.id] for c, _ in couples]
            edited = parts(program, [e for _, e in couples])
            sub = {k: v[rows] for k, v in clean.items()}
            g = [gold[i] for i in rows]
            for v in views:
                result["cells"][edit][v] = cell(g, [clean_labels[v][i] for i in rows],
                                                labels_of(v, program, edited, labels), labels)
            if name == "ce-blend":
                base = [clean_labels["ce-blend"][i] for i in rows]
                result["ablation"][edit] = {part: int(sum(a != b for a, b in zip(base, got)))
                                            for part, got in ablation(program, sub, edited, labels).items()}
                result["ablation"][edit]["n"] = len(rows)
    result["seconds"] = round(time.perf_counter() - start, 1)
    return json.loads(json.dumps(result))


# ------------------------------------------------------------------------------------------------- report


def table(run: dict) -> str:
    """One run's table: flip rate and accuracy (clean accuracy on the same pairs) per edit and judge; then ce-blend's
    ablation."""
    views = list(run["clean"])
    lines = [f"### {run['dataset']} ({run['tag']}): {run['pairs']} held-out pairs "
             f"({', '.join(f'{k} {v}' for k, v in run['label_counts'].items())}), "
             f"{'judge ' + Path(run['judge']).name if run['judge'] else 'judges fitted here (quick)'}", "",
             "| edit | n | " + " | ".join(f"{v}: flips, acc (clean)" for v in views) + " |",
             "|---|---|" + "---|" * len(views)]
    lines.append("| none (clean) | " + str(run["pairs"]) + " | " + " | ".join(
        f"kappa {run['clean'][v]['kappa']:.3f}, acc {run['clean'][v]['accuracy']:.3f}" for v in views) + " |")
    for edit, cells in run["cells"].items():
        n = next(iter(cells.values()))["n"]
        lines.append(f"| {edit} | {n} | " + " | ".join(
            f"{c['flips'] / c['n']:.1%}, {c['accuracy']:.3f} ({c['clean_accuracy']:.3f})" if (c := cells.get(v))
            else "-" for v in views) + " |")
    if run["ablation"]:
        lines += ["", "ce-blend's flips with one part reading the edited copy (the others the clean one):", "",
                  "| edit | n | all parts | item prior | other scorer features | cross-encoder |", "|---|---|---|---|---|---|"]
        for edit, a in run["ablation"].items():
            total = run["cells"][edit]["ce-blend"]["flips"]
            lines.append(f"| {edit} | {a['n']} | {total} | {a['item prior']} | {a['other scorer features']} | "
                         f"{a['cross-encoder']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("stage", choices=("measure", "report"))
    p.add_argument("--dataset", choices=sorted(DATASETS), default="msrd")
    p.add_argument("--data", type=Path, default=None, help="the dataset's folder (Home Depot, TREC)")
    p.add_argument("--judge", default=None, help="a compiled ce-blend artifact (else --fit quick fits one here)")
    p.add_argument("--fit", choices=("quick",), default="quick")
    p.add_argument("--refit-scorer", action="store_true",
                   help="with --judge: refit its scorer with this code (the cross-encoder and blend kept)")
    p.add_argument("--judges", default="ce-blend,embed-lr", help="comma-separated: ce-blend, embed-lr")
    p.add_argument("--embedder", default="auto", help="embed-lr's embedder: auto (MiniLM) | lexical")
    p.add_argument("--ce-pairs", type=int, default=1024, help="a quick ce-blend's cross-encoder pairs")
    p.add_argument("--train-limit", type=int, default=None, help="a quick ce-blend's train pairs (seeded sample)")
    p.add_argument("--pairs", type=int, default=600, help="held-out pairs (equal numbers of each label)")
    p.add_argument("--heldout-share", type=float, default=0.3, help="Home Depot, TREC: share of held-out queries")
    p.add_argument("--families", default="", help="attack families (default: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tag", default="after")
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    if args.stage == "report":
        runs = [json.loads(f.read_text()) for f in sorted(args.out.glob("*.json"))]
        text = "\n\n".join(table(r) for r in runs)
        Path(f"{args.out}.md").write_text(f"# Stability benchmark (bench/stability.py)\n\n{text}\n")
        print(text)
        return
    if args.dataset != "msrd" and args.data is None:
        p.error(f"--dataset {args.dataset} needs --data FOLDER")
    args.judges = args.judges.split(",")
    result = measure(args)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.dataset}-{args.tag}.json").write_text(json.dumps(result, indent=1))
    print(table(result))


if __name__ == "__main__":
    main()
