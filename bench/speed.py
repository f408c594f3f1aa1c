"""How near the CPU's limit the best offline judge runs: ce-blend's compile, fine-tuning and scoring, each path (torch
fp32, ONNX fp32, ONNX int8) timed and scored on the same pairs, beside the model's FLOPs and this CPU's measured
fp32 matrix-multiply rate.

    python -m bench.speed --work /tmp/speed                 # compile (quickstart) + every measurement, ~15 min
    python -m bench.speed --work /tmp/speed --stage measure # reuse WORK/ce-blend.json, measure only
    python -m bench.speed --work /tmp/s --set ce_pairs=64 --set ce_max_len=32 --pairs 16 --embed-texts 8 \
        --train-pairs 64 --train-steps 1 --label-pairs 0 --out-dir /tmp/s/results   # everything, small (a check)

Stages:
- compile: `python -m optimize.compile --dataset msrd --method ce-blend --budget quickstart` in a subprocess (README
  command 1 without the install): wall and CPU seconds, peak RSS, the fine-tuning's steps and seconds read from its
  progress lines, and its own dev summary line (kappa with CI, embed-lr beside it, McNemar).
- measure: (and `--label-pairs N` pool pairs through `python -m eval.label` with the artifact, wall and CPU) the
  artifact's cross-encoder scores the 300 bundled dev pairs (query-disjoint from every pool and train
  pair it learned from) through each path at batch 1, 16 and 64: wall and CPU seconds a pair, the blend's kappa on
  the same pairs with each path's scores and the largest change of P(relevant) against torch; MiniLM sentence
  embeddings through sentence-transformers and through ONNX (s a text); a few training steps with plain and with
  length-bucketed batches (s a step, the token budget); the FLOPs of one pair at the pairs' mean token count; this
  CPU's fp32 GEMM rate (numpy, 2 threads), and what that makes the floor of s a pair.

Every row carries the CPU's speed flags (`hiera_dspy.signals.cpu`). Results: bench/results/speed.md and speed.json
(`--out-dir`).
The machine is shared: wall times carry the other developers' load (the load average is recorded), CPU seconds less.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from hiera_dspy.metrics.numbers import with_ci
from hiera_dspy.signals.cpu import cpu_model, speed_flags

OUT = Path("bench/results")
BATCHES = (1, 16, 64)
SHORT = 64  # the shorter cut a row tries (the model was fine-tuned at its own max_len)


def flops_per_pair(config, tokens: float) -> float:
    """Multiply-adds x 2 of one forward pass of a BERT encoder over `tokens` tokens: the dense layers (4 d^2 + 2 d ff
    weights a token a layer) plus attention's two L x L x d products a layer (embeddings, head: negligible)."""
    d, ff, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    dense = 2 * tokens * (4 * d * d + 2 * d * ff) * layers
    attention = 2 * 2 * tokens * tokens * d * layers
    return float(dense + attention)


def gemm_rate(seconds: float = 3.0, n: int = 1024) -> float:
    """Measured fp32 matrix-multiply GFLOP/s of numpy's BLAS on this machine (its threads), best of repeated runs."""
    a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    b = a.T.copy()
    best, end = 0.0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        t = time.perf_counter()
        a @ b
        best = max(best, 2 * n ** 3 / (time.perf_counter() - t) / 1e9)
    return best


def stage_compile(work: Path, budget: str = "quickstart", settings: tuple[str, ...] = ()) -> dict:
    """Run README command 1's compile in a subprocess (at `budget`, with `settings` KEY=VALUE overrides of ce-blend's
    config); its wall, CPU, peak RSS, fine-tuning steps and summary."""
    work.mkdir(parents=True, exist_ok=True)
    art = work / "ce-blend.json"
    cmd = [sys.executable, "-m", "optimize.compile", "--dataset", "msrd", "--method", "ce-blend", "--budget",
           budget, "--out", str(art), *(arg for s in settings for arg in ("--set", s))]
    env = {**os.environ, "HIERA_RUNS_DIR": str(work / "runs")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(work / "compile.out", "w") as out, open(work / "compile.err", "w") as err:
        code = subprocess.call(cmd, stdout=out, stderr=err, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code != 0:
        raise SystemExit(f"compile failed ({code}): see {work / 'compile.err'}")
    stdout, stderr = (work / "compile.out").read_text(), (work / "compile.err").read_text()
    steps = re.findall(r"cross-encoder: step (\d+)/(\d+), loss [\d.]+, (\d+) s", stderr)
    last = steps[-1] if steps else ("0", "0", "0")
    summary = [line.strip() for line in stdout.splitlines() if line.strip().startswith("kappa")]
    return {"command": " ".join(cmd[1:]), "wall_s": wall,
            "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "peak_rss_mb": after.ru_maxrss / 1024, "fine_tune_steps": int(last[1]), "fine_tune_s": float(last[2]),
            "summary": summary[-1] if summary else None, "learned": [line.strip() for line in stdout.splitlines()
                                                                    if line.strip().startswith("learned:")]}


def stage_label(work: Path, n: int) -> dict:
    """`python -m eval.label` with the compiled ce-blend on `n` pool pairs (unlabelled): wall and CPU seconds, and
    the 100,000-pair time that rate makes."""
    from hiera_dspy.data import load_dataset

    pool = load_dataset("msrd").split("pool")[:n]
    pairs = work / "label-pairs.jsonl"
    pairs.write_text("".join(json.dumps({"id": p.id, "query": p.query, "item_title": p.item_title,
                                         "item_text": p.item_text, "query_id": p.query_id, "item_id": p.item_id})
                             + "\n" for p in pool))
    cmd = [sys.executable, "-m", "eval.label", "--dataset", f"jsonl:{pairs}", "--scheme", "msrd", "--judge",
           str(work / "ce-blend.json"), "--out", str(work / "labelled"), "--knowledge", "none", "--threads", "2"]
    timer = ["/usr/bin/time", "-f", "peak_rss_kb=%M"] if Path("/usr/bin/time").is_file() else []
    env = {**os.environ, "HIERA_RUNS_DIR": str(work / "runs")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(work / "label.err", "w") as err:
        code = subprocess.call(timer + cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code != 0:
        raise SystemExit(f"eval.label failed ({code}): see {work / 'label.err'}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rss = re.findall(r"peak_rss_kb=(\d+)", (work / "label.err").read_text())
    return {"command": " ".join(cmd[1:]), "pairs": len(pool), "wall_s": wall, "cpu_s": cpu,
            "peak_rss_mb": int(rss[-1]) / 1024 if rss else None, "wall_100k_min": wall / len(pool) * 100_000 / 60}


def _timed(fn) -> tuple[float, float, object]:
    w, c = time.perf_counter(), time.process_time()
    value = fn()
    return time.perf_counter() - w, time.process_time() - c, value


def stage_measure(work: Path, train_steps: int, n_pairs: int = 0, embed_texts: int = 256,
                  train_pairs: int = 4000) -> dict:
    """Every measurement of the module doc on the artifact the compile stage wrote: on the first `n_pairs` dev pairs
    (0: every one), `embed_texts` pool documents embedded, training steps on the first `train_pairs` pool pairs."""
    from hiera_dspy.artifacts.judge_file import load_judge
    from hiera_dspy.data import load_dataset
    from hiera_dspy.methods.cross import blend_labels
    from hiera_dspy.methods.grades import distributions
    from hiera_dspy.metrics.agreement import kappa_of_labels
    from hiera_dspy.metrics.classification import bootstrap_ci
    from hiera_dspy.signals.onnx_encoder import FP32, INT8, OnnxRunner

    dataset = load_dataset("msrd")
    labels = list(dataset.scheme.labels)
    dev = [p for p in dataset.split("dev") if p.label in labels][:n_pairs or None]
    judge = load_judge(work / "ce-blend.json")
    ce = judge.encoder
    folder = ce_folder(work)
    triples = [(p.query, p.item_title, p.item_text) for p in dev]
    enc = ce.tokenizer([q for q, _, _ in triples], [_view(t, x) for _, t, x in triples], truncation="only_second",
                       max_length=ce.max_len)
    tokens = float(np.mean([len(ids) for ids in enc["input_ids"]]))
    flops = flops_per_pair(ce.model.config, tokens)
    paths = {"torch fp32": None, "ONNX fp32": OnnxRunner(folder / FP32)}
    if (folder / INT8).is_file():
        paths["ONNX int8"] = OnnxRunner(folder / INT8, one_text_a_run=True)
    shipped = json.loads((folder / "onnx.json").read_text())
    scorer_d = distributions([judge._scorer_dist(*t) for t in triples], labels)
    gold = [p.label for p in dev]
    w, cuts = judge.blend["weight"], judge.blend["thresholds"]
    rows, reference = [], None
    full_len = ce.max_len
    variants = [(name, runner, full_len) for name, runner in paths.items()]
    for name in ("ONNX int8", "ONNX fp32"):  # the same weights reading fewer tokens: half the FLOPs, other labels
        if name in paths and SHORT < full_len:
            variants.append((f"{name}, cut at {SHORT} tokens", paths[name], SHORT))
    for name, runner, max_len in variants:
        ce.runner, ce.score_len = runner, max_len
        ce.logits(triples[:8])  # warm-up
        timing = {}
        for b in BATCHES:
            n = min(32, len(triples)) if b == 1 else len(triples)
            wall, cpu, _ = _timed(lambda: ce.logits(triples[:n], batch=b))
            timing[b] = (wall / n, cpu / n)
        ce_d = ce.grade_probs(triples, batch=64)
        p = ce_d[:, -1]  # P(top label)
        pred = blend_labels(scorer_d, ce_d, w, cuts, labels)
        if reference is None:
            reference = (p, pred)
        alone = blend_labels(scorer_d, ce_d, 1.0, cuts, labels)  # the cross-encoder alone, at the blend's cut
        rows.append({"path": name, "timing": timing, "kappa": kappa_of_labels(gold, pred),
                     "ci": bootstrap_ci(gold, pred, labels, "kappa"), "kappa_ce_alone": kappa_of_labels(gold, alone),
                     "max_dp": float(np.max(np.abs(p - reference[0]))),
                     "agreement": float(np.mean([a == b for a, b in zip(pred, reference[1])])),
                     "shipped": _is_shipped(name, max_len, shipped, full_len)})
    ce.runner, ce.score_len = None, full_len
    return {"tokens_mean": tokens, "flops_per_pair": flops, "gemm_gflops": gemm_rate(), "paths": rows,
            "n_pairs": len(triples), "blend": judge.blend, "onnx": shipped,
            "embedding": embedding_rows(dataset, embed_texts), "training": training_rows(ce, dataset, train_steps,
                                                                                       pool=train_pairs)}


def _view(title, text):
    from hiera_dspy.signals.cross_encoder import item_view

    return item_view(title, text)


def _is_shipped(name: str, tokens: int, manifest: dict, full_len: int) -> bool:
    """Whether the row is the path the compile chose (`signals/fast_path.py`: precision and tokens read)."""
    return name.startswith({"int8": "ONNX int8", "fp32": "ONNX fp32"}[manifest["use"]]) and \
        tokens == int(manifest.get("score_max_len") or full_len)


def ce_folder(work: Path) -> Path:
    """The weights folder beside the artifact."""
    from hiera_dspy.artifacts.judge_file import files_folder

    return files_folder(work / "ce-blend.json")


def embedding_rows(dataset, n: int = 256) -> list[dict]:
    """s a text of MiniLM sentence embeddings (pool item documents, the long texts), torch vs ONNX, and their cosine."""
    from hiera_dspy.signals.features import SentenceTransformerEmbedder, item_document
    from hiera_dspy.signals.onnx_embedder import OnnxSentenceEmbedder

    seen, texts = set(), []
    for p in dataset.split("pool"):
        doc = item_document(p.item_title, p.item_text)
        if doc not in seen:
            seen.add(doc)
            texts.append(doc)
        if len(texts) == n:
            break
    out, vectors = [], {}
    for name, make in (("sentence-transformers (torch fp32)", SentenceTransformerEmbedder),
                       ("ONNX fp32", OnnxSentenceEmbedder)):
        emb = make()
        emb.encode(texts[:8])
        wall, cpu, v = _timed(lambda: emb.encode(texts))
        vectors[name] = np.asarray(v)
        out.append({"path": name, "s_text": wall / len(texts), "cpu_text": cpu / len(texts), "texts": len(texts)})
    a, b = vectors.values()
    out[-1]["min_cosine"] = float((a * b).sum(1).min())
    return out


def training_rows(ce, dataset, steps: int, batch: int = 32, pool: int = 4000) -> list[dict]:
    """s a training step (forward, backward, AdamW) of the cross-encoder on pool pairs: plain batches against
    length-bucketed ones, fp32 against bf16 autocast (`cross_encoder.forward_precision`), at the model's tokens and
    cut at `SHORT`; each one's token budget (a copy of the model: the artifact's stays as it is)."""
    import copy

    import torch

    from hiera_dspy.signals.batching import length_bucketed_batches, token_budget
    from hiera_dspy.signals.cross_encoder import forward_precision

    pairs = [p for p in dataset.split("pool")[:pool] if p.label in dataset.scheme.labels]
    out = []
    configs = [("plain (shuffled)", ce.max_len, "fp32"), ("length-bucketed", ce.max_len, "fp32"),
               ("length-bucketed", ce.max_len, "bf16")]
    if SHORT < ce.max_len:
        configs += [("length-bucketed", SHORT, "fp32"), ("length-bucketed", SHORT, "bf16")]
    for name, max_len, precision in configs:
        enc = ce.tokenizer([p.query for p in pairs], [_view(p.item_title, p.item_text) for p in pairs],
                           truncation="only_second", max_length=max_len)
        lengths = [len(ids) for ids in enc["input_ids"]]
        index = list(range(len(pairs)))
        batches = ([index[i:i + batch] for i in range(0, len(index) - batch + 1, batch)] if name.startswith("plain")
                   else length_bucketed_batches(index, lengths, batch, seed=0))
        model = copy.deepcopy(ce.model).train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
        times = []
        for chunk in batches[:steps]:
            feeds = ce.tokenizer.pad({k: [enc[k][i] for i in chunk] for k in enc.keys()}, return_tensors="pt")
            y = torch.tensor([float(pairs[i].label == dataset.scheme.labels[-1]) for i in chunk])
            t = time.perf_counter()
            with forward_precision(precision):
                logits = model(**feeds).logits[:, 0]
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits.float(), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            times.append(time.perf_counter() - t)
        budget = token_budget([[lengths[i] for i in b] for b in batches])
        out.append({"batches": f"{name}, {max_len} tokens, {precision}", "s_step": float(np.median(times)),
                    "steps": len(times), "efficiency": budget["efficiency"],
                    "tokens_padded_per_step": budget["padded"] / len(batches)})
    return out


def table(compiled: dict | None, measured: dict) -> str:
    """The markdown page."""
    flags, cpu = speed_flags(), cpu_model()
    load = os.getloadavg()[0]
    gflops = measured["gemm_gflops"]
    floor = measured["flops_per_pair"] / (gflops * 1e9)
    lines = [f"# ce-blend speed on {cpu}, {os.cpu_count()} cores, flags: {flags}",
             "",
             f"`python -m bench.speed` ({time.strftime('%Y-%m-%d')}; load average {load:.1f} at the end: a shared "
             "machine). One pair = the query against the item view cut at "
             f"{'%d' % round(measured['tokens_mean'])} tokens on average (of the {measured['n_pairs']} bundled dev "
             "pairs): "
             f"**{measured['flops_per_pair'] / 1e9:.2f} GFLOP** a forward pass (MiniLM-L6, d=384). This CPU's measured "
             f"fp32 GEMM rate (numpy, all cores): **{gflops:.0f} GFLOP/s**, so the fp32 floor is "
             f"**{floor * 1000:.1f} ms a pair**; int8 without VNNI (AVX2's vpmaddubsw) at most ~2x that rate.",
             "",
             "| path | flags | batch 1 s/pair (CPU s) | batch 16 | batch 64 | x the fp32 floor at 64 | blend kappa "
             "[95% CI] on the same pairs | blend labels equal to torch's | cross-encoder alone kappa | max abs change "
             "of P vs torch | shipped |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in measured["paths"]:
        t = r["timing"]
        cells = [f"{t[b][0]:.4f} ({t[b][1]:.4f})" for b in BATCHES]
        lines.append(f"| {r['path']} | {flags} | {' | '.join(cells)} | {t[64][0] / floor:.1f} | "
                     f"{with_ci(r['kappa'], r['ci'])} | {r['agreement']:.3f} | {r['kappa_ce_alone']:.3f} | "
                     f"{r['max_dp']:.4f} | "
                     f"{'yes' if r['shipped'] else ''} |")
    q = measured["onnx"]
    choice = (f"the compile's choice of scoring path (signals/fast_path.py, on its {q['check_pairs']} held-out pairs: "
              f"the fastest keeping >= {q['min_agreement']} of the blend's labels and its kappa within "
              f"{q['kappa_tolerance']}): {q['why']}" if "score_max_len" in q else f"int8 choice: {q['why']}")
    lines += ["", f"{choice}; shipped: {q['use']} at {q.get('score_max_len', 'full')} tokens.",
              "", f"| embeddings ({measured['embedding'][0]['texts']} pool item documents) | flags | s/text wall | "
              "CPU s/text | min cosine to torch |",
              "|---|---|---|---|---|"]
    for r in measured["embedding"]:
        lines.append(f"| {r['path']} | {flags} | {r['s_text']:.4f} | {r['cpu_text']:.4f} | "
                     f"{r.get('min_cosine', 1.0):.6f} |")
    lines += ["", "| training step (batch 32, fwd + bwd + AdamW) | flags | median s/step | steps timed | "
              "real/padded tokens | padded tokens a step |", "|---|---|---|---|---|---|"]
    for r in measured["training"]:
        lines.append(f"| {r['batches']} | {flags} | {r['s_step']:.2f} | {r['steps']} | {r['efficiency']:.3f} | "
                     f"{r['tokens_padded_per_step']:.0f} |")
    lab = measured.get("label")
    if lab:
        rss = f"{lab['peak_rss_mb']:.0f}" if lab.get("peak_rss_mb") else "-"
        lines += ["", "| eval.label with the artifact (start-up included) | flags | pairs | wall s | CPU s | s/pair | "
                  "peak RSS MB | 100,000 pairs at that rate |",
                  "|---|---|---|---|---|---|---|---|",
                  f"| `{lab['command']}` | {flags} | {lab['pairs']:,} | {lab['wall_s']:.0f} | {lab['cpu_s']:.0f} | "
                  f"{lab['wall_s'] / lab['pairs']:.4f} | {rss} | {lab['wall_100k_min']:.1f} min |"]
    lines.append(f"\nbf16 autocast: {'available' if 'bf16' in flags else 'not used: no AVX512_BF16 / AMX-BF16 here'}.")
    if compiled:
        steps = compiled["fine_tune_steps"]
        lines += ["", "| whole compile | flags | wall s | CPU s | peak RSS MB | fine-tuning steps | fine-tuning s | "
                  "s/step |", "|---|---|---|---|---|---|---|---|",
                  f"| `{compiled['command']}` | {flags} | {compiled['wall_s']:.0f} | {compiled['cpu_s']:.0f} | "
                  f"{compiled['peak_rss_mb']:.0f} | {steps} | {compiled['fine_tune_s']:.0f} | "
                  f"{compiled['fine_tune_s'] / max(steps, 1):.2f} |", "",
                  f"Its own report: `{compiled['summary']}`", ""] + [f"- {x}" for x in compiled["learned"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    """Run the stages and write bench/results/speed.md and speed.json."""
    p = argparse.ArgumentParser(prog="python -m bench.speed", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", type=Path, default=Path("/tmp/speed"))
    p.add_argument("--stage", choices=("all", "compile", "measure"), default="all")
    p.add_argument("--train-steps", type=int, default=6, help="training steps timed per batching (default 6)")
    p.add_argument("--label-pairs", type=int, default=1000, help="pool pairs eval.label judges (default 1000; 0: skip)")
    p.add_argument("--budget", default="quickstart", help="the compile's budget (default quickstart: README command 1)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a ce-blend config override for "
                   "the compile (repeatable), e.g. ce_pairs=64 for a quick check")
    p.add_argument("--pairs", type=int, default=0, help="first N dev pairs the paths score (default 0: every one)")
    p.add_argument("--embed-texts", type=int, default=256, help="pool documents embedded (default 256)")
    p.add_argument("--train-pairs", type=int, default=4000, help="pool pairs the training steps read (default 4000)")
    p.add_argument("--out-dir", type=Path, default=OUT, help="results folder (default bench/results)")
    args = p.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    record = args.work / "compile.json"
    if args.stage in ("all", "compile"):
        record.write_text(json.dumps(stage_compile(args.work, args.budget, tuple(args.set)), indent=2))
        print(record.read_text())
    if args.stage in ("all", "measure"):
        compiled = json.loads(record.read_text()) if record.is_file() else None
        measured = stage_measure(args.work, args.train_steps, args.pairs, args.embed_texts, args.train_pairs)
        measured["label"] = stage_label(args.work, args.label_pairs) if args.label_pairs else None
        args.out_dir.mkdir(parents=True, exist_ok=True)
        (args.out_dir / "speed.json").write_text(json.dumps({"compile": compiled, "measure": measured, "cpu": cpu_model(),
                                                    "flags": speed_flags()}, indent=2, default=str))
        page = table(compiled, measured)
        (args.out_dir / "speed.md").write_text(page)
        print(page)


if __name__ == "__main__":
    main()
