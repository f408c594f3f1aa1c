"""The probe's cost per new pair, with and without the shared prompt prefix (issue 21 part 5: <= 1 s a pair).

    flock /work/model.lock nice -n -5 python -m bench.probe_timing --source pool --queries 4 --per-query 24
    flock /work/model.lock nice -n -5 python -m bench.probe_timing --source dev --pairs 48 [--write]

The probe's prompts as `methods.probe_states` builds them (`--text-chars`: the method's default), without the disk
cache, read by the llama-cpp-python runtime (`runtimes/llama_cpp_runtime.Embedder`) twice on one loaded model:

- `alone`: every prompt read whole from position 0 (the KV cache cleared each time);
- `shared`: in sorted order, each prompt read from the end of its longest common token prefix with the one before
  (`hiera_dspy.lm.prefix_reuse`): the template, the system line and, for the prompts of one query, the query too.

`--source pool`: `--queries` queries of the bundled MSRD pool with `--per-query` items each (a benchmark's holes: a
query has ~24 judged items); `--source dev`: the first `--pairs` dev pairs (one or two a query). Each prompt is timed
alone (wall and the process's CPU seconds: llama.cpp's threads included), so the table gives seconds a pair, CPU
seconds a pair, tokens read a pair, the first pair of a query (its prefix included) against each further pair of it,
and the load average. `--write` adds the rows to bench/results/probe_timing.md and .json.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from hiera_dspy.data import load_dataset
from hiera_dspy.lm import model_store
from hiera_dspy.lm.local import default_threads
from hiera_dspy.lm.prefix_timing import time_prompts
from hiera_dspy.methods.probe import PROBE
from hiera_dspy.methods.probe_prompt import PromptFormat

OUT = Path("bench/results")


def pool_pairs(dataset, queries: int, per_query: int) -> list:
    """The first `per_query` pool pairs of each of the first `queries` pool queries (sorted by text) with that many."""
    by_query: dict[str, list] = {}
    for pair in dataset.splits["pool"]:
        by_query.setdefault(pair.query, []).append(pair)
    chosen = [q for q in sorted(by_query) if len(by_query[q]) >= per_query][:queries]
    return [p for q in chosen for p in by_query[q][:per_query]]


def cpu() -> str:
    """This machine's CPU: /proc/cpuinfo's model name and the SIMD extensions llama.cpp's matrix kernels use most
    (AVX-512 VNNI or AMX make prompt reading several times faster than AVX2 alone; the cost is the CPU's, not 2 cores')."""
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "?")
    flags = set(next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), []))
    simd = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_int8") if f in flags]
    return f"{model} ({', '.join(simd) or 'no AVX2'})"


def markdown(rows: list[dict]) -> str:
    """The rows as a table."""
    lines = ["| source | text chars | last line (L: the labels) | mode | pairs (queries) | prompt tokens/pair | tokens read/pair | s/pair wall | "
             "CPU-s/pair | first pair of a query, s | each further pair, s | threads | load (1 min) | CPU |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        further = "-" if r["s_further_pair_of_query"] is None else f"{r['s_further_pair_of_query']:.2f}"
        line = r.get("question", "default")
        line = "How relevant ...? Answer L." if line.startswith("How relevant") else line.replace("{labels}", "L")
        lines.append(f"| {r['source']} | {r['text_chars']} | {line} | {r['mode']} | {r['pairs']} ({r['queries']}) | "
                     f"{r['prompt_tokens_per_pair']:.0f} | {r['tokens_read_per_pair']:.0f} | {r['s_per_pair']:.2f} | "
                     f"{r['cpu_s_per_pair']:.2f} | {r['s_first_pair_of_query']:.2f} | {further} | {r['threads']} | "
                     f"{r['load'][0]:.1f}-{r['load'][1]:.1f} | {r.get('cpu', 'not recorded (before 2026-12-02)')} |")
    return "\n".join(lines) + "\n"


def write(rows: list[dict], out: Path) -> None:
    """Append the rows to probe_timing.json and rewrite probe_timing.md from all of them."""
    out.mkdir(parents=True, exist_ok=True)
    file = out / "probe_timing.json"
    every = (json.loads(file.read_text()) if file.is_file() else []) + rows
    file.write_text(json.dumps(every, indent=1) + "\n")
    (out / "probe_timing.md").write_text(
        "### The probe's cost per new pair (`bench/probe_timing.py`; llama-cpp-python, Qwen2.5-Coder-1.5B Q4_K_M, "
        "2-core machine shared with other jobs: the load column is the 1-minute load average before and after)\n\n"
        + markdown(every))


def main(argv: list[str] | None = None) -> list[dict]:
    """Time `alone` and `shared` on one loaded model; print (and with --write, record) the rows."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", choices=("pool", "dev"), default="pool")
    ap.add_argument("--queries", type=int, default=4)
    ap.add_argument("--per-query", type=int, default=24)
    ap.add_argument("--pairs", type=int, default=48, help="--source dev: how many dev pairs")
    ap.add_argument("--text-chars", type=int, default=PROBE["text_chars"])
    ap.add_argument("--question", help="another last line (\"{labels}\" filled in; default: the prompt builder's)")
    ap.add_argument("--modes", default="alone,shared")
    ap.add_argument("--write", action="store_true", help="record the rows in bench/results/probe_timing.*")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    from hiera_dspy.lm.runtimes.llama_cpp_runtime import Embedder

    dataset = load_dataset("msrd")
    pairs = pool_pairs(dataset, args.queries, args.per_query) if args.source == "pool" \
        else list(dataset.splits["dev"][:args.pairs])
    path = str(model_store.ensure_model())
    fmt = PromptFormat.for_model(dataset.scheme.labels, path)
    question = args.question or True
    prompts = [fmt.render(p.query, p.item_title, p.item_text, args.text_chars, question=question) for p in pairs]
    threads = default_threads()
    embedder = Embedder(path, threads)
    embedder.embed([fmt.render("warm up", "Item", "text", args.text_chars)])
    rows = []
    for mode in args.modes.split(","):
        load = os.getloadavg()[0]
        row = time_prompts(embedder, prompts, [p.query for p in pairs], share=(mode == "shared"))
        row.update(source=args.source, text_chars=args.text_chars, question=args.question or "default", threads=threads,
                   load=[load, os.getloadavg()[0]], cpu=cpu())
        print(json.dumps(row), flush=True)
        rows.append(row)
    embedder.close()
    if args.write:
        write(rows, Path(args.out))
    print(markdown(rows))
    return rows


if __name__ == "__main__":
    main()
