"""LLM methods reading their queries' known judgments as demos (`hiera_dspy.methods.known_demos`), measured with the
embedded model: each configuration judged with `--known` (5 known judgments a query) and without, on the same pairs.

    python -m bench.known_demos --work /tmp/known-demos [--configs msrd:thomas,msrd:zero-shot,dl20:thomas] \
        [--step 10] [--limit 100] [--dl-holes 60] [--lm local]

- `msrd:METHOD`: the first `--limit` bundled MSRD dev pairs; the known judgments are 5 a query drawn (seed 0) from
  the MSRD judgment pool (`judgments-pool.tsv.gz`, $MSRD_POOL or the bundled copy) among the query's judgments that
  are no dev pair (so never a pair's own), written as qrels; the texts come from the dataset's catalog.
- `dl20:METHOD`: TREC DL 2020 (a folder with topics.tsv, qrels.txt, corpus.jsonl[.gz]; `--dl20`): 5 judged
  passages of each query are known (labelled JSONL with their texts, seed 0), and `--dl-holes` other judged
  passages are the holes (labelled JSONL pairs), one a query in turn, then a second, ...

Each configuration in turn grows `--step` pairs at a time, without and with the known judgments one after the other, up
to `--limit` (each a resume of the same runs in `WORK/store.sqlite`), so wherever the bench is stopped both sides of
a row have judged the same pairs (a judgment that ends in an error, e.g. a grade outside the scale, is counted
under errors and scored as a miss); the table (kappa with its 95% CI, accuracy, tokens and seconds a judgment) is
rewritten after each step to `--out`. One thread a judgment (one local model serialises its calls).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from collections import defaultdict
from pathlib import Path

from eval import run as eval_run
from hiera_dspy.data import load_dataset
from hiera_dspy.metrics.numbers import number

KNOWN_A_QUERY = 5
SHARED = Path("/work/shared/data")


def msrd_known(work: Path, limit: int, pool: Path) -> Path:
    """qrels of 5 pool judgments a query of the first `limit` dev pairs, none of them a dev pair."""
    dataset = load_dataset("msrd")
    pairs = dataset.split("dev", limit)
    judged = {(p.query_id, p.item_id) for p in dataset.split("dev")}
    queries = {p.query_id for p in pairs}
    catalog = {e.id for e in dataset.catalog or ()}
    by_query: dict[str, list[tuple[str, int]]] = defaultdict(list)
    with gzip.open(pool, "rt", encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            qid, _, doc, grade = line.rstrip("\n").split("\t")
            if qid in queries and (qid, doc) not in judged and doc in catalog:
                by_query[qid].append((doc, int(grade)))
    rng = random.Random(0)
    lines = []
    for qid in sorted(by_query):
        for doc, grade in sorted(rng.sample(by_query[qid], min(KNOWN_A_QUERY, len(by_query[qid])))):
            lines.append(f"{qid} 0 {doc} {grade}\n")
    out = work / "msrd-known.qrels"
    out.write_text("".join(lines))
    return out


def dl20_files(work: Path, folder: Path, holes: int) -> tuple[Path, Path]:
    """(pairs.jsonl of `holes` holes, one a query, known.jsonl of 5 other judged passages of each hole's query)."""
    topics = dict(line.split("\t", 1) for line in (folder / "topics.tsv").read_text().splitlines() if "\t" in line)
    corpus_path = next(p for p in (folder / "corpus.jsonl.gz", folder / "corpus.jsonl") if p.is_file())
    opener = gzip.open if corpus_path.suffix == ".gz" else open
    qrels: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for line in (folder / "qrels.txt").read_text().splitlines():
        qid, _, doc, grade = line.split()
        qrels[qid].append((doc, int(grade)))
    rng = random.Random(0)
    queries = sorted(q for q, js in qrels.items() if len(js) > KNOWN_A_QUERY + 2 and q in topics)
    picks: dict[str, tuple[list, list]] = {}
    for qid in queries:
        judged = sorted(qrels[qid])
        rng.shuffle(judged)
        picks[qid] = (judged[KNOWN_A_QUERY:], judged[:KNOWN_A_QUERY])  # (hole candidates, known)
    order = queries[:]
    rng.shuffle(order)
    chosen: list[tuple[str, tuple[str, int]]] = []
    for turn in range(holes):  # one hole a query in turn, then a second, ...: `holes` in all
        qid = order[turn % len(order)]
        chosen.append((qid, picks[qid][0][turn // len(order)]))
    wanted = {doc for _, (doc, _) in chosen} | {doc for q, _ in chosen for doc, _ in picks[q][1]}
    texts = {}
    with opener(corpus_path, "rt", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if str(row["id"]) in wanted:
                texts[str(row["id"])] = (row.get("title") or "", row["text"])
    def row(qid, doc, grade):
        title, text = texts[doc]
        return json.dumps({"id": f"{qid}:{doc}", "query_id": qid, "query": topics[qid].strip(), "item_id": doc,
                           "item_title": title, "item_text": text, "label": grade}) + "\n"
    pairs, known = work / "dl20-holes.jsonl", work / "dl20-known.jsonl"
    pairs.write_text("".join(row(q, *hole) for q, hole in chosen))
    known.write_text("".join(row(q, d, g) for q in sorted({q for q, _ in chosen}) for d, g in picks[q][1]))
    return pairs, known


def line(name: str, m: dict) -> str:
    ci = m.get("kappa_ci") or (None, None)
    return (f"| {name} | {m['n']} | {number(m['kappa'])} [{number(ci[0])}, {number(ci[1])}] | {number(m['accuracy'])} | "
            f"{number(m['tokens_per_judgment'], '.0f')} | {number(m['seconds_per_judgment'], '.1f')} | {m['errors']} |")


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", default="/tmp/known-demos")
    p.add_argument("--configs", default="msrd:thomas,msrd:zero-shot,dl20:thomas")
    p.add_argument("--step", type=int, default=10)
    p.add_argument("--limit", type=int, default=100, help="MSRD dev pairs the known judgments are drawn for")
    p.add_argument("--upto", type=int, help="judge at most this many pairs of each configuration (default: all)")
    p.add_argument("--dl-holes", type=int, default=60)
    p.add_argument("--dl20", default=str(SHARED / "trecdl2020"))
    p.add_argument("--pool", default=str(SHARED / "msrd" / "judgments-pool.tsv.gz"))
    p.add_argument("--lm", default="local")
    p.add_argument("--out", default="bench/results/known_demos.md")
    args = p.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    configs = [c.split(":", 1) for c in args.configs.split(",")]
    sources = {}
    if any(d == "msrd" for d, _ in configs):
        sources["msrd"] = (["--dataset", "msrd", "--split", "dev"], msrd_known(work, args.limit, Path(args.pool)),
                           args.limit)
    if any(d == "dl20" for d, _ in configs):
        pairs, known = dl20_files(work, Path(args.dl20), args.dl_holes)
        sources["dl20"] = (["--dataset", f"jsonl:{pairs}", "--scheme", "trec"], known, args.dl_holes)
    common = ["--lm", args.lm, "--knowledge", "none", "--threads", "1", "--store", str(work / "store.sqlite"),
              "--max-error-rate", "1"]  # a judgment that ends in an error is counted in the table, not a stop
    results: dict[tuple, dict] = {}
    table = ""
    for data, method in configs:
        head, known, most = sources[data]
        most = min(most, args.upto or most)
        for size in range(args.step, most + args.step, args.step):
            for with_known in (False, True):
                extra = ["--known", str(known)] if with_known else []
                m = eval_run.main([*head, *common, "--method", method, "--limit", str(min(size, most)), *extra])
                results[data, method, with_known] = m
            rows = ["| configuration | n | kappa [95% CI] | accuracy | tokens/judgment | s/judgment | errors |",
                    "|" + "---|" * 7]
            for (d, meth, k), m in results.items():
                rows.append(line(f"{d} {meth}, {'5 known a query' if k else 'no known'}", m))
            table = "\n".join(rows)
            out = Path(args.out)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(f"# Known judgments as demos, LM {args.lm}\n\n`python -m bench.known_demos "
                           f"{' '.join(argv or sys.argv[1:])}`\n\n{table}\n")
            print(table, flush=True)
    return table


if __name__ == "__main__":
    main()
