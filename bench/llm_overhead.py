"""The LLM path's own cost: zero-shot labelling against an OpenAI-compatible endpoint that answers at once (the
loopback fault server in its own process, 0 ms latency), so every second measured is the product's.

    python -m bench.llm_overhead run --pairs 20000 --threads 32 --repeats 3          # end to end, eval.label
    python -m bench.llm_overhead run --pairs 20000 --engine async --concurrency 64 --repeats 3
    python -m bench.llm_overhead profile --pairs 1000                                   # where a judgment's time goes
    python -m bench.llm_overhead imports                                                # what a command loads first

- run: `python -m eval.label` in a subprocess over N synthetic pairs (fresh store, output folder and DSPy response
  cache each repeat: a repeat that reused the last one's cache would be served every answer from disk):
  wall seconds, CPU seconds (user + system) and peak RSS of the command, seconds per 1,000 judgments (the median of
  the repeats), and judgments a second.
- profile: the same labelling in this process on one thread under cProfile; each function's own time is put in one
  bucket by the file it lives in: prompt formatting and answer parsing (DSPy's adapters and signatures), the LM client
  (DSPy's LM, LiteLLM, httpx/OpenAI and the sockets below), the run store (store/, sqlite3), progress (runs/progress),
  the ledger (lm/ledger), the rest of hiera_dspy, the rest of DSPy, pydantic, and everything else; plus the seconds
  before the first judgment (imports and setup).
- imports: the wall seconds of `import eval.label` in a fresh interpreter (median of 5), and whether it loads
  LiteLLM, DSPy and the ablation job.

The machine is shared: every row records the load average. Results: bench/results/llm_overhead.md (appended).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "llm_overhead.md"
SERVER = ROOT / "tests" / "fault_server.py"

# bucket -> substrings of a profiled function's file (the first bucket whose substring matches wins)
BUCKETS: dict[str, tuple[str, ...]] = {
    "imports": ("importlib", "marshal", "builtins.compile", "builtins.exec", "typing_extensions"),
    "waiting (locks, queues, sleeps)": ("SimpleQueue", "'acquire' of '_thread", "'wait' of", "time.sleep", "'poll' of",
                                         "'select' of", "threading.py"),
    "progress": ("hiera_dspy/runs/progress",),
    "ledger": ("hiera_dspy/lm/ledger",),
    "run store": ("hiera_dspy/store/", "sqlite3", "{method 'execute", "{method 'commit", "{method 'executemany"),
    "prompt formatting + parsing (DSPy adapters)": ("dspy/adapters/", "dspy/signatures/"),
    "LM client (DSPy LM, LiteLLM, HTTP)": ("dspy/clients/", "litellm/", "httpx/", "httpcore/", "openai/", "h11/",
                                         "http/client", "socket", "ssl", "aiohttp/"),
    "hiera_dspy (the rest)": ("hiera_dspy/",),
    "DSPy (the rest)": ("dspy/",),
    "pydantic": ("pydantic",),
}


def write_pairs(path: Path, n: int) -> Path:
    """N synthetic pairs, 50 to a query, without labels (what eval.label labels)."""
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            q = i // 50
            fh.write(json.dumps({"id": f"p{i}", "query_id": f"q{q}", "query": f"query number {q} about films",
                                 "item_id": f"d{i}", "item_title": f"Film {i}",
                                 "item_text": f"A film about topic {i % 97}, with a cast and a plot."}) + "\n")
    return path


class Endpoint:
    """The loopback fault server in its own process, answering at once."""

    def __enter__(self) -> str:
        self.proc = subprocess.Popen([sys.executable, str(SERVER), "--latency", "0"], stdout=subprocess.PIPE,
                                     text=True, cwd=ROOT)
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        if not line.startswith("URL "):
            raise RuntimeError(f"the loopback server did not start: {line!r}")
        return line.split()[1]

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def label_argv(pairs: Path, url: str, work: Path, threads: int, engine: str, concurrency: int) -> list[str]:
    argv = ["--dataset", f"jsonl:{pairs}", "--labels", "Bad,Good", "--method", "zero-shot", "--lm", "openai/fake",
            "--api-base", url, "--knowledge", "none", "--out", str(work / "out"), "--store",
            str(work / "store.sqlite"), "--engine", engine]
    return argv + (["--concurrency", str(concurrency)] if engine == "async" else ["--threads", str(threads)])


def run_once(pairs: Path, url: str, n: int, threads: int, engine: str, concurrency: int, tree: Path = ROOT) -> dict:
    """One eval.label subprocess (of the checkout `tree`): wall, CPU and peak RSS."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = {**os.environ, "OPENAI_API_KEY": "sk-loopback", "HIERA_RUNS_DIR": str(work),
               "DSPY_CACHEDIR": str(work / "dspy-cache")}  # a cold cache each repeat: every answer from the server
        cmd = [sys.executable, "-m", "eval.label", *label_argv(pairs, url, work, threads, engine, concurrency)]
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        err = proc.stderr.read() if proc.stderr else ""  # type: ignore[union-attr]
        if status != 0:
            raise RuntimeError(f"eval.label failed ({status}): {err[-2000:]}")
        labelled = sum(1 for _ in open(work / "out" / "labels.jsonl", encoding="utf-8"))
    if labelled != n:
        raise RuntimeError(f"{labelled} of {n} pairs labelled")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024}


def run(args) -> str:
    with tempfile.TemporaryDirectory() as tmp, Endpoint() as url:
        pairs = write_pairs(Path(tmp) / "pairs.jsonl", args.pairs)
        rows = [run_once(pairs, url, args.pairs, args.threads, args.engine, args.concurrency, Path(args.tree))
                for _ in range(args.repeats)]
    wall = statistics.median(r["wall"] for r in rows)
    cpu = statistics.median(r["cpu"] for r in rows)
    how = f"async, concurrency {args.concurrency}" if args.engine == "async" else f"threads {args.threads}"
    return (f"| {time.strftime('%Y-%m-%d %H:%M')} | {git_head(Path(args.tree))} | {args.pairs:,} | {how} | {args.repeats} | "
            f"{wall:.1f} ({', '.join(format(r['wall'], '.1f') for r in rows)}) | **{1000 * wall / args.pairs:.2f}** | "
            f"{1000 * cpu / args.pairs:.2f} | {args.pairs / wall:.0f} | {max(r['rss_mb'] for r in rows):.0f} | "
            f"{load()} |")


def profile(args) -> str:
    os.environ.setdefault("OPENAI_API_KEY", "sk-loopback")
    with tempfile.TemporaryDirectory() as tmp, Endpoint() as url:
        work = Path(tmp)
        os.environ["HIERA_RUNS_DIR"] = str(work)
        os.environ["DSPY_CACHEDIR"] = str(work / "dspy-cache")  # read by DSPy at import: a cold cache
        pairs = write_pairs(work / "pairs.jsonl", args.pairs)
        started = time.perf_counter()
        profiler = cProfile.Profile()
        profiler.enable()
        from eval import label as eval_label

        imported = time.perf_counter() - started
        workers = every_thread_profiled()
        eval_label.main(label_argv(pairs, url, work, 1, args.engine, args.concurrency))
        profiler.disable()
        total = time.perf_counter() - started
    buckets: Counter = Counter()
    parts: dict[str, Counter] = {}
    stats = pstats.Stats(profiler, *[w for w in workers if w.getstats()])
    for (file, line, name), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        where = file if file != "~" else name
        bucket = next((b for b, keys in BUCKETS.items() if any(k in where for k in keys)), "other")
        buckets[bucket] += own
        parts.setdefault(bucket, Counter())[f"{where.rpartition('site-packages/')[2]}:{line}({name})"] += own
    profiled = sum(buckets.values())
    how = f"async, concurrency {args.concurrency}" if args.engine == "async" else "one thread"
    lines = [f"profile of {args.pairs:,} pairs on {how} ({time.strftime('%Y-%m-%d %H:%M')}, {git_head()}, "
             f"load {load()}): {total:.1f} s in all, {imported:.1f} s importing eval.label before the first "
             f"judgment; own time by bucket, s per 1,000 judgments (under cProfile, which slows every call):", "",
             "| bucket | s per 1,000 | share |", "|---|---|---|"]
    for bucket, seconds in buckets.most_common():
        lines.append(f"| {bucket} | {1000 * seconds / args.pairs:.2f} | {100 * seconds / profiled:.0f}% |")
    for bucket in [b for b, _ in buckets.most_common() if not b.startswith("waiting")][:args.top_buckets]:
        lines += ["", f"the largest parts of `{bucket}`:", ""]
        lines += [f"- {where}: {1000 * seconds / args.pairs:.2f} s per 1,000"
                  for where, seconds in parts[bucket].most_common(args.top)]
    return "\n".join(lines)


def every_thread_profiled() -> list[cProfile.Profile]:
    """Profile every thread started from now on (the engine's workers): their profilers, filled as they run."""
    import threading

    profilers: list[cProfile.Profile] = []
    run = threading.Thread.run

    def profiled(self):
        mine = cProfile.Profile()
        profilers.append(mine)
        mine.enable()
        try:
            run(self)
        finally:
            mine.disable()

    threading.Thread.run = profiled  # type: ignore[method-assign]
    return profilers


def imports(args) -> str:
    probe = ("import sys, time; t = time.perf_counter(); import eval.label; t = time.perf_counter() - t; "
             "print(t, 'litellm' in sys.modules, 'dspy' in sys.modules, 'hiera_dspy.jobs.ablating' in sys.modules)")
    outs = [subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
            .stdout.split() for _ in range(5)]
    seconds = statistics.median(float(o[0]) for o in outs)
    return (f"import eval.label ({time.strftime('%Y-%m-%d %H:%M')}, {git_head()}, load {load()}): {seconds:.2f} s "
            f"(median of 5); loads LiteLLM {outs[0][1]}, DSPy {outs[0][2]}, the ablation job {outs[0][3]}")


def git_head(tree: Path = ROOT) -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True, text=True)
    return out.stdout.strip() or (tree.name if tree != ROOT else "?")


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


HEADER = ("| when | commit | pairs | engine | repeats | wall s, median (each) | s per 1,000 | CPU s per 1,000 | "
          "judgments/s | peak RSS MB | load |\n|---|---|---|---|---|---|---|---|---|---|---|")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.llm_overhead", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=("run", "profile", "imports"))
    p.add_argument("--pairs", type=int, default=20000)
    p.add_argument("--threads", type=int, default=32)
    p.add_argument("--engine", choices=("threads", "async"), default="threads")
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--tree", default=str(ROOT), help="run: the checkout whose eval.label runs (an earlier commit's "
                                                     "worktree, for a before/after)")
    p.add_argument("--top", type=int, default=5, help="profile: the functions shown of each bucket")
    p.add_argument("--top-buckets", type=int, default=4, help="profile: the buckets whose functions are shown")
    p.add_argument("--no-write", action="store_true", help="print only, append nothing to the results")
    args = p.parse_args(argv)
    text = {"run": run, "profile": profile, "imports": imports}[args.what](args)
    if args.what == "run":
        text = f"{HEADER}\n{text}"
    print(text)
    if not args.no_write:
        with open(OUT, "a", encoding="utf-8") as fh:
            fh.write(text + "\n\n")


if __name__ == "__main__":
    main()
