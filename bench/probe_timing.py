"""The probe's cost per new pair: the old prompt one pair per call against the new prompt batched.

    flock /work/model.lock python bench/probe_timing.py --pairs 100 [--runtime xllamacpp] [--batch 8]

"before": the prompt of the first probe (movie wording, Qwen's markers written out, 600 characters of item text), one
pair per llama.cpp call. "after": `hiera_dspy.lm.hidden` as it is (the scheme's labels, the model's chat template, the
item through `untrusted.item_block`, `text_chars` characters compacted), `--batch` pairs per llama.cpp batch. Both
without the disk cache, on the first `--pairs` MSRD dev pairs; prints seconds per pair and prompt tokens per pair.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from hiera_dspy.data import load_dataset  # noqa: E402
from hiera_dspy.lm import hidden, model_store  # noqa: E402
from hiera_dspy.lm.local import default_threads  # noqa: E402
from hiera_dspy.lm.runtimes import choose  # noqa: E402
from hiera_dspy.methods.probe import PROBE  # noqa: E402

OLD = ("<|im_start|>system\nYou judge search relevance for a movie search engine.<|im_end|>\n"
       "<|im_start|>user\nSearch query: {query}\n\nMovie: {title}\n{text}\n\n"
       "Is this movie a relevant result for the search query? Answer Relevant or Irrelevant.<|im_end|>\n"
       "<|im_start|>assistant\n")


def timed(embedder, prompts: list[str], batch: int) -> float:
    """Seconds per prompt, `batch` prompts per call."""
    start = time.perf_counter()
    for i in range(0, len(prompts), batch):
        embedder.embed(prompts[i:i + batch])
    return (time.perf_counter() - start) / len(prompts)


def main(argv: list[str] | None = None) -> dict:
    """Time before and after; print and return the numbers."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=100)
    ap.add_argument("--runtime", help="xllamacpp | llama-cpp-python (default: the first installed)")
    ap.add_argument("--batch", type=int, default=hidden.batch_size())
    ap.add_argument("--text-chars", type=int, default=PROBE["text_chars"])
    ap.add_argument("--skip-before", action="store_true")
    args = ap.parse_args(argv)
    dataset = load_dataset("msrd")
    pairs = dataset.splits["dev"][:args.pairs]
    path = str(model_store.ensure_model())
    runtime = choose(args.runtime)
    states = hidden.states_for(None, dataset.scheme.labels, cache=False)
    new = [states.prompt(p.query, p.item_title, p.item_text, args.text_chars) for p in pairs]
    result = {"runtime": runtime.name, "pairs": len(pairs), "batch": args.batch, "text_chars": args.text_chars}
    if not args.skip_before:
        old = [OLD.format(query=p.query, title=p.item_title, text=(p.item_text or "")[:600]) for p in pairs]
        one = runtime.load_embedder(path, default_threads(), 1)
        one.embed(old[:1])  # warm-up
        result["before_s_per_pair"] = timed(one, old, 1)
        one.close()
    many = runtime.load_embedder(path, default_threads(), args.batch)
    many.embed(new[:1])
    result["after_s_per_pair"] = timed(many, new, args.batch)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
