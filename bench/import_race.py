"""The import race of ce-blend's fit, in fresh interpreters: one thread imports
`sentence_transformers.SentenceTransformer` (the scorer's embedder) while another imports what the cross-encoder's
fine-tuning imports (`transformers.AutoModelForSequenceClassification, AutoTokenizer,
get_linear_schedule_with_warmup`), both released at once by a barrier. `--preload` first runs the product's
`cross_encoder.preload` in the main thread, as `CrossBlendProgram.prepare` does before it starts the worker; without
it, the two threads are the first to import, as the fit did before.

    python bench/import_race.py --runs 50            # both ways, 50 interpreters each
    python bench/import_race.py --runs 50 --only preload --base /path/to/model

Prints and writes (bench/results/import_race.json, and its table import_race.md) each way's count of interpreters
that failed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import sys, threading
if sys.argv[1] == "preload":
    from hiera_dspy.labels import get_scheme
    from hiera_dspy.signals.cross_encoder import preload
    preload(get_scheme("msrd"), base=sys.argv[2] or None)
errors, gate = [], threading.Barrier(2)

def scorer_side():
    gate.wait()
    try:
        from sentence_transformers import SentenceTransformer  # noqa: F401
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")

def fine_tuning_side():
    gate.wait()
    try:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup  # noqa: F401
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")

threads = [threading.Thread(target=scorer_side), threading.Thread(target=fine_tuning_side)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("FAILED " + " | ".join(errors) if errors else "OK")
"""


def one(way: str, base: str) -> str:
    """One fresh interpreter's outcome: "OK" or "FAILED <errors>"."""
    env = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT),
           "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run([sys.executable, "-c", CHILD, way, base], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **env}, timeout=600)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return f"FAILED exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}"
    return lines[-1]


def race(way: str, runs: int, base: str = "", parallel: int = 2) -> dict:
    """`runs` fresh interpreters of `way` ("bare" or "preload"), `parallel` at a time: counts and failure texts."""
    start = time.perf_counter()
    with ThreadPoolExecutor(parallel) as pool:
        outcomes = list(pool.map(lambda _: one(way, base), range(runs)))
    failed = [o for o in outcomes if o != "OK"]
    return {"way": way, "runs": runs, "failed": len(failed), "failures": sorted(set(failed))[:5],
            "seconds": round(time.perf_counter() - start, 1)}


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--only", choices=("bare", "preload"))
    parser.add_argument("--base", default="", help="the cross-encoder's base folder (default: the bundled MiniLM)")
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "import_race.json"))
    args = parser.parse_args(argv)
    results = [race(way, args.runs, args.base, args.parallel) for way in ("bare", "preload")
               if args.only in (None, way)]
    for r in results:
        print(f"{r['way']:8} {r['failed']}/{r['runs']} interpreters failed ({r['seconds']} s) {r['failures']}")
    if args.out != "-":
        Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
        Path(args.out).with_suffix(".md").write_text(table(results))
    return results


def table(results: list[dict]) -> str:
    """The results as a markdown table, with the machine's load when they were taken."""
    lines = [f"# Import race of ce-blend's two workers (bench/import_race.py), load average {os.getloadavg()[0]:.1f} "
             f"on {os.cpu_count()} cores", "", "| way | interpreters | failed | seconds | failures |",
             "|---|---:|---:|---:|---|"]
    lines += [f"| {r['way']} | {r['runs']} | {r['failed']} | {r['seconds']} | {'; '.join(r['failures']) or '-'} |"
              for r in results]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
